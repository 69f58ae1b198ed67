// GGUF: every kind of damaged or hostile file is refused in one line that names the problem, and
// the writer refuses what the reader would.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "tests/formats/gguf_test_bytes.h"

using namespace remat;
using namespace remat::gguf_test;

namespace {

// A well-formed file: one key, one f32 tensor of 8 values at offset 0.
Raw one_tensor(const std::vector<uint64_t>& ne = {8}, uint32_t type = 0, uint64_t offset = 0) {
  Raw r = Raw::header(1, 1);
  r.kv_str("general.architecture", "llama").info("w", ne, type, offset).pad(32);
  return r;
}

// A file whose only key is `key` of GGUF type `type`, followed by `value` bytes.
std::string with_key(const std::string& key, uint32_t type, const std::string& value) {
  Raw r = Raw::header(0, 1);
  r.str(key).u32(type);
  return r.b + value;
}

}  // namespace

TEST_CASE("GGUF refuses bad magic, version 1, unknown versions and big-endian files") {
  expect_refused("GG", "file is 2 bytes, too short for a GGUF header");
  std::string ggml = Raw::header(0, 0).b;
  ggml.replace(0, 4, "GGML");
  expect_refused(ggml, "not a GGUF file: it starts with 'GGML', not 'GGUF'");
  expect_refused(std::string("\x01\x02GU", 4) + "rest", "it starts with '??GU'");
  expect_refused(Raw::header(0, 0, 1).b, "is GGUF version 1, which remat does not read");
  expect_refused(Raw::header(0, 0, 4).b, "is GGUF version 4; remat reads versions 2 and 3");
  expect_refused(Raw::header(0, 0, 0).b, "is GGUF version 0");
  expect_refused(Raw::header(0, 0, 0x03000000).b,
                 "is big-endian (its version reads as 0x03000000)");
  CHECK_NOTHROW(view(Raw::header(0, 0, 2).b));
  CHECK_NOTHROW(view(Raw::header(0, 0, 3).b));
}

TEST_CASE("GGUF refuses a file truncated anywhere, in the header, metadata, infos or data") {
  Raw r = Raw::header(2, 3);
  r.kv_str("general.architecture", "llama").kv_u32("llama.block_count", 2);
  r.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(2).str("<s>").str("hello");
  r.info("a", {4}, 0, 0).info("b", {32, 2}, 8, 32).pad(32);
  const std::size_t data_offset = r.b.size();
  r.zeros(32 + 68);
  const std::string full = r.b;
  REQUIRE(view(full).tensors().size() == 2);
  for (std::size_t n = 4; n < full.size(); ++n) {
    INFO("the first " << n << " bytes");
    CHECK_THROWS_WITH(view(full.substr(0, n)),
                      Catch::StartsWith("t.gguf: ") && Catch::Contains("truncated"));
  }
  // Where a count leaves room enough, the message says what the file ends inside of.
  expect_refused(Raw::header(0, 1).u64(20).b + "general.arch",
                 "inside the name of key 0 (20 bytes)");
  expect_refused(Raw::header(0, 1).str("k").u32(8).u64(5).b + "ab",
                 "inside the value of key 'k' (5 bytes)");
  expect_refused(Raw::header(0, 1).str("k").u32(8).b + "abc",
                 "inside the length of the value of key 'k'");
  expect_refused(Raw::header(0, 1).str("t").u32(9).u32(8).u64(2).str("<s>").u64(5).b + "he",
                 "inside the value of key 't' [1] (5 bytes)");
  expect_refused(full.substr(0, 240), "inside the offset of tensor 'b'");
  expect_refused(full.substr(0, data_offset - 3), "before its data section at byte 256");
  expect_refused(full.substr(0, data_offset + 40),
                 "tensor 'b' needs 68 bytes at offset 32 of a data section of 40: the file is "
                 "truncated");
}

TEST_CASE("GGUF refuses absurd counts and lengths before allocating for them") {
  expect_refused(Raw::header(1ull << 62, 0).b, "header claims 4611686018427387904 tensors");
  expect_refused(Raw::header(0, 1ull << 60).b, "header claims 1152921504606846976 metadata keys");
  expect_refused(Raw::header(0, 1).u64(1ull << 63).zeros(16).b,
                 "truncated: the file ends at byte 48, inside the name of key 0 "
                 "(9223372036854775808 bytes)");
  expect_refused(with_key("k", 9, Raw().u32(8).u64(1ull << 61).b),
                 "key 'k' claims 2305843009213693952 elements of string");
  expect_refused(with_key("k", 9, Raw().u32(6).u64(1000).b), "claims 1000 elements of float32");
  expect_refused(with_key("k", 8, Raw().u64(~0ull).b), "inside the value of key 'k'");
  // Metadata past the header limit: a sparse 300 MiB file whose one string is 257 MiB long.
  TempDir dir("limit");
  const auto path = dir / "big.gguf";
  write_whole(path, with_key("k", 8, Raw().u64(257ull << 20).b));
  std::filesystem::resize_file(path, 300ull << 20);
  CHECK_THROWS_WITH(GgufFile::open(path),
                    Catch::Contains("the value of key 'k' (269484032 bytes) lies past the first "
                                    "256 MiB of the file"));
}

TEST_CASE("GGUF refuses unknown value types, arrays of arrays, bad bools, bad keys") {
  expect_refused(with_key("k", 13, ""), "key 'k' has unknown value type 13");
  expect_refused(with_key("k", 9, Raw().u32(9).u64(1).b),
                 "key 'k' is an array of arrays, which remat does not read");
  expect_refused(with_key("k", 9, Raw().u32(77).u64(1).b),
                 "key 'k' is an array of unknown value type 77");
  expect_refused(with_key("k", 7, Raw().u8(2).b), "key 'k' holds the bool byte 2, not 0 or 1");
  expect_refused(with_key("k", 9, Raw().u32(7).u64(2).u8(1).u8(255).b), "bool byte 255");
  expect_refused(with_key("", 4, Raw().u32(1).b), "key 0 has an empty name");
  Raw twice = Raw::header(0, 2);
  twice.kv_u32("k", 1).kv_str("k", "again");
  expect_refused(twice.b, "key 'k' appears twice");
}

TEST_CASE("GGUF refuses a general.alignment that is not a uint32 power of two") {
  Raw r = Raw::header(0, 1);
  expect_refused(r.str("general.alignment").u32(10).u64(64).b,
                 "key 'general.alignment' is uint64, not uint32");
  expect_refused(Raw::header(0, 1).kv_u32("general.alignment", 48).b,
                 "general.alignment 48 is not a power of two");
  expect_refused(Raw::header(0, 1).kv_u32("general.alignment", 0).b,
                 "general.alignment 0 is not a power of two");
  Raw ok = Raw::header(1, 1);
  ok.kv_u32("general.alignment", 8).info("w", {2}, 0, 8).pad(8).zeros(16);
  CHECK(view(ok.b).parts()[0].alignment == 8);
  CHECK(view(ok.b).tensors()[0].offset % 8 == 0);
}

TEST_CASE("GGUF refuses tensor infos with bad names, dimensions, types or partial blocks") {
  CHECK_NOTHROW(view(one_tensor().zeros(32).b));
  expect_refused(one_tensor({}).zeros(32).b, "tensor 'w' has 0 dimensions; GGUF allows 1 to 4");
  expect_refused(one_tensor({1, 1, 1, 1, 8}).zeros(32).b, "tensor 'w' has 5 dimensions");
  expect_refused(one_tensor({8, 0}).zeros(32).b, "tensor 'w' has dimension 1 of size 0");
  expect_refused(one_tensor({1ull << 32, 1ull << 32}).zeros(32).b,
                 "tensor 'w' has dimension 1 of size 4294967296, past 2^63 elements in all");
  expect_refused(one_tensor({1ull << 63}).zeros(32).b, "past 2^63 elements");
  // Under 2^63 elements, yet more than 2^64 bytes: in one row, or over many rows.
  expect_refused(one_tensor({1ull << 62}).zeros(32).b, "tensor 'w' takes more than 2^64 bytes");
  expect_refused(one_tensor({2, 1ull << 61}).zeros(32).b,
                 "tensor 'w' takes more than 2^64 bytes");
  CHECK_THROWS_AS(ggml_row_bytes(GgmlType::f32, 1ull << 62), std::overflow_error);
  CHECK(ggml_row_bytes(GgmlType::f32, (1ull << 62) - 1) == ~uint64_t{0} - 3);
  expect_refused(one_tensor({8}, 31).zeros(32).b, "tensor 'w' has unknown ggml type id 31");
  expect_refused(one_tensor({8}, 4).zeros(32).b, "unknown ggml type id 4");  // q4_2, removed
  expect_refused(
      one_tensor({100, 2}, 12).zeros(512).b,
      "tensor 'w' has rows of 100 values, not whole blocks of q4_K (256 values a block)");
  expect_refused(one_tensor({48}, 2).zeros(64).b, "rows of 48 values, not whole blocks of q4_0");
  Raw twice = Raw::header(2, 0);
  twice.info("w", {8}, 0, 0).info("w", {8}, 0, 32).pad(32).zeros(64);
  expect_refused(twice.b, "tensor 'w' appears twice");
  Raw unnamed = Raw::header(1, 0);
  unnamed.info("", {8}, 0, 0).pad(32).zeros(32);
  expect_refused(unnamed.b, "tensor 0 has an empty name");
  Raw long_name = Raw::header(1, 0);
  long_name.info(std::string(64, 'n'), {8}, 0, 0).pad(32).zeros(32);
  expect_refused(long_name.b, "is 64 bytes; ggml allows at most 63");
}

TEST_CASE("GGUF refuses tensor offsets that are unaligned, out of range or overlapping") {
  expect_refused(one_tensor({8}, 0, 16).zeros(64).b,
                 "tensor 'w' has offset 16, not a multiple of the alignment 32");
  expect_refused(one_tensor({8}, 0, 64).zeros(64).b,
                 "tensor 'w' needs 32 bytes at offset 64 of a data section of 64");
  expect_refused(one_tensor({8}, 0, 1ull << 63).zeros(64).b, "at offset 9223372036854775808");
  Raw overlap = Raw::header(2, 0);
  overlap.info("a", {16}, 0, 0).info("b", {8}, 0, 32).pad(32).zeros(64);
  expect_refused(overlap.b, "tensor 'b' overlaps tensor 'a' in the data section");
  // Tensors in any order with gaps between them are fine, as long as none overlap.
  Raw gaps = Raw::header(2, 0);
  gaps.info("late", {8}, 0, 96).info("early", {4}, 0, 0).pad(32).zeros(128);
  const std::string bytes = gaps.b;
  const GgufFile f = view(bytes);
  CHECK(f.tensors()[0].name == "late");
  CHECK(f.tensors()[0].offset == f.parts()[0].data_offset + 96);
}

TEST_CASE("GGUF lists tensors of types remat does not decode, check_supported() refuses them") {
  for (const auto& [id, name] : {std::pair{17u, "iq2_xs"}, std::pair{39u, "mxfp4"}}) {
    const uint64_t row = ggml_type_info(static_cast<GgmlType>(id)).block_values;
    const std::string bytes =
        one_tensor({row}, id).zeros(ggml_type_info(static_cast<GgmlType>(id)).block_bytes).b;
    const GgufFile f = view(bytes);
    REQUIRE(f.tensors().size() == 1);
    CHECK(ggml_type_info(f.tensors()[0].type).name == name);
    CHECK_THROWS_WITH(f.check_supported(),
                      Catch::Equals(std::string("t.gguf: tensor 'w' has type ") + name +
                                    ", which remat does not decode"));
  }
}

TEST_CASE("GGUF writer refuses what the reader would refuse and keeps the previous file") {
  TempDir dir("writer");
  const auto path = dir / "w.gguf";
  GgufWriter first(path, GgufMetadata(), {{"x", GgmlType::f32, {1}}});
  first.write(std::vector<float>{1.0f});
  first.commit();
  const std::string before = read_whole(path);
  const auto refused = [&](const std::vector<GgufTensorSpec>& specs, const std::string& what,
                           GgufMetadata md = GgufMetadata()) {
    INFO("expecting: " << what);
    CHECK_THROWS_WITH(GgufWriter(path, md, specs),
                      Catch::StartsWith(path.string() + ": ") && Catch::Contains(what));
  };
  refused({{"", GgmlType::f32, {1}}}, "a tensor name cannot be empty");
  refused({{std::string(64, 'n'), GgmlType::f32, {1}}}, "ggml allows at most 63");
  refused({{"a", GgmlType::f32, {1}}, {"a", GgmlType::f16, {2}}}, "tensor 'a' appears twice");
  refused({{"a", GgmlType::f32, {}}}, "tensor 'a' has 0 dimensions");
  refused({{"a", GgmlType::f32, {1, 1, 1, 1, 1}}}, "tensor 'a' has 5 dimensions");
  refused({{"a", GgmlType::f32, {4, 0}}}, "tensor 'a' has a dimension of size 0");
  refused({{"a", GgmlType::f32, {1ull << 32, 1ull << 31}}}, "2^63 elements or more");
  refused({{"a", GgmlType::q4_k, {100}}}, "rows of 100 values, not whole blocks of q4_K");
  GgufMetadata bad_alignment;
  bad_alignment.set("general.alignment", GgufValue::of<uint32_t>(24));
  refused({}, "general.alignment must be a uint32 power of two", bad_alignment);
  bad_alignment.set("general.alignment", GgufValue::of<uint64_t>(32));
  refused({}, "general.alignment must be a uint32 power of two", bad_alignment);
  {
    GgufWriter w(path, GgufMetadata(), {{"a", GgmlType::q4_0, {32}}, {"b", GgmlType::f16, {2}}});
    CHECK_THROWS_WITH(w.write(std::vector<float>{1.0f}),
                      Catch::Contains("tensor 'a' is q4_0; write its blocks as bytes"));
    w.write(bytes_of(std::string(18, 'q')));
    w.write(bytes_of(std::string(1, 'h')));
    CHECK_THROWS_WITH(w.write(std::vector<float>{1.0f}), Catch::Contains("inside an element"));
    w.write(bytes_of(std::string(3, 'h')));
    CHECK_THROWS_WITH(w.write(bytes_of(std::string(1, 'x'))),
                      Catch::Contains("more bytes than the tensors hold"));
    CHECK_THROWS_WITH(w.write(std::vector<float>{1.0f}), Catch::Contains("more values"));
  }
  {
    GgufWriter w(path, GgufMetadata(), {{"a", GgmlType::f32, {2}}});
    w.write(std::vector<float>{1.0f});
    CHECK_THROWS_WITH(w.commit(), Catch::Contains("tensor 'a' was not written whole"));
  }
  CHECK(read_whole(path) == before);  // neither write without commit() replaced the file
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) (void)e, ++entries;
  CHECK(entries == 1);
  CHECK_THROWS_WITH(GgufWriter(dir / "no/such/dir.gguf", GgufMetadata(), {}),
                    Catch::Contains("cannot write"));
}
