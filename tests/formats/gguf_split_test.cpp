// GGUF split files as llama.cpp's gguf-split writes them (NAME-00001-of-0000N.gguf with split.no,
// split.count and split.tensors.count): opened from any part as one model, and every way the parts
// can disagree refused. Also the hidden case that writes the fuzzer's seed corpus.
#include <catch2/catch.hpp>

#include <filesystem>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "tests/formats/gguf_test_bytes.h"

using namespace remat;
using namespace remat::gguf_test;

namespace {

struct PartKeys {
  int64_t no = 0, count = 3, total = 4;
  bool first_metadata = false;
};

// One part holding f32 tensors of 4 values each, tensor k's values k, k + 1, ...
void write_part(const std::filesystem::path& path, const PartKeys& k,
                const std::vector<std::string>& names) {
  GgufMetadata md;
  if (k.first_metadata) md.set("general.architecture", GgufValue::of("llama"));
  md.set("split.no", GgufValue::of(static_cast<uint16_t>(k.no)));
  md.set("split.count", GgufValue::of(static_cast<uint16_t>(k.count)));
  md.set("split.tensors.count", GgufValue::of(static_cast<int32_t>(k.total)));
  std::vector<GgufTensorSpec> specs;
  for (const auto& n : names) specs.push_back({n, GgmlType::f32, {4}});
  GgufWriter w(path, md, specs);
  for (const auto& n : names) {
    const auto base = static_cast<float>(n.back());
    w.write(std::vector<float>{base, base + 1, base + 2, base + 3});
  }
  w.commit();
}

// The three parts of model-0000N-of-00003.gguf: a in the first, b and c in the second, d in the
// third.
void write_model(const TempDir& dir) {
  write_part(gguf_split_path((dir / "model").string(), 0, 3), {0, 3, 4, true}, {"t.a"});
  write_part(gguf_split_path((dir / "model").string(), 1, 3), {1, 3, 4}, {"t.b", "t.c"});
  write_part(gguf_split_path((dir / "model").string(), 2, 3), {2, 3, 4}, {"t.d"});
}

std::filesystem::path part(const TempDir& dir, uint32_t no) {
  return gguf_split_path((dir / "model").string(), no, 3);
}

}  // namespace

TEST_CASE("GGUF split files are named as llama.cpp names them") {
  CHECK(gguf_split_path("/m/model", 0, 3) == "/m/model-00001-of-00003.gguf");
  CHECK(gguf_split_path("x", 11, 12) == "x-00012-of-00012.gguf");
}

TEST_CASE("GGUF split files open from any part as one model with the first part's metadata") {
  TempDir dir("split");
  write_model(dir);
  for (uint32_t given : {0u, 1u, 2u}) {
    INFO("opened through part " << given + 1);
    const GgufFile f = GgufFile::open(part(dir, given));
    CHECK(f.split_count() == 3);
    REQUIRE(f.parts().size() == 3);
    CHECK(f.origin() == part(dir, 0).string());
    for (uint32_t i = 0; i < 3; ++i) CHECK(f.parts()[i].origin == part(dir, i).string());
    CHECK(f.parts()[1].tensor_count == 2);
    CHECK(f.metadata().string("general.architecture") == "llama");
    REQUIRE(f.tensors().size() == 4);
    const std::vector<std::string> names = {"t.a", "t.b", "t.c", "t.d"};
    const std::vector<uint32_t> parts = {0, 1, 1, 2};
    for (std::size_t i = 0; i < 4; ++i) {
      const GgufTensor& t = f.tensors()[i];
      CHECK(t.name == names[i]);
      CHECK(t.part == parts[i]);
      float v[4];
      f.read(t, 0, std::as_writable_bytes(std::span(v)));
      CHECK(v[0] == static_cast<float>(names[i].back()));
      CHECK(v[3] == v[0] + 3);
    }
    CHECK(f.tensor("t.c")->part == 1);
  }
  // A part viewed alone lists its own tensors and says there are others.
  const std::string second = read_whole(part(dir, 1));
  const GgufFile alone = view(second);
  CHECK(alone.split_count() == 3);
  CHECK(alone.tensors().size() == 2);
}

TEST_CASE("GGUF split parts that disagree with each other are refused, naming the part") {
  TempDir dir("split_bad");
  const auto refused = [&](uint32_t open_no, uint32_t bad_no, const std::string& what) {
    INFO("expecting: " << what);
    CHECK_THROWS_WITH(
        GgufFile::open(part(dir, open_no)),
        Catch::StartsWith(part(dir, bad_no).string() + ": ") && Catch::Contains(what));
  };
  SECTION("a part says another number of parts") {
    write_model(dir);
    write_part(part(dir, 1), {1, 4, 4}, {"t.b", "t.c"});
    refused(0, 1, "has split.count 4, but " + part(dir, 0).string() + " has 3");
  }
  SECTION("a part holds another split.no than its name says") {
    write_model(dir);
    write_part(part(dir, 2), {1, 3, 4}, {"t.d"});
    refused(0, 2, "has split.no 1, but its name makes it part 3 (split.no 2)");
  }
  SECTION("a part is missing") {
    write_model(dir);
    std::filesystem::remove(part(dir, 2));
    refused(1, 1, "is part 2 of 3, but part 3 (" + part(dir, 2).string() + ") does not exist");
  }
  SECTION("two parts hold the same tensor") {
    write_model(dir);
    write_part(part(dir, 2), {2, 3, 4}, {"t.b"});
    refused(0, 2, "tensor 't.b' is also in " + part(dir, 1).string());
  }
  SECTION("split.tensors.count is not the number of tensors of all parts") {
    write_part(part(dir, 0), {0, 3, 5, true}, {"t.a"});
    write_part(part(dir, 1), {1, 3, 5}, {"t.b", "t.c"});
    write_part(part(dir, 2), {2, 3, 5}, {"t.d"});
    refused(2, 0, "split.tensors.count is 5 but the 3 parts hold 4 tensors");
  }
  SECTION("the parts disagree on split.tensors.count") {
    write_model(dir);
    write_part(part(dir, 1), {1, 3, 5}, {"t.b", "t.c"});
    refused(0, 1, "split.tensors.count differs from " + part(dir, 0).string());
  }
  SECTION("a part's name does not say which part it is") {
    write_part(dir / "model.gguf", {1, 3, 4}, {"t.b"});
    CHECK_THROWS_WITH(GgufFile::open(dir / "model.gguf"),
                      Catch::Contains("is part 2 of 3 of a split model, but its name does not end "
                                      "in '-00002-of-00003.gguf'"));
  }
  SECTION("split.no is not below split.count, or split.count is 0") {
    write_part(dir / "a.gguf", {3, 3, 4}, {"t.a"});
    CHECK_THROWS_WITH(GgufFile::open(dir / "a.gguf"),
                      Catch::Contains("split.no 3 is not below split.count 3"));
    write_part(dir / "b.gguf", {0, 0, 4}, {"t.a"});
    CHECK_THROWS_WITH(GgufFile::open(dir / "b.gguf"),
                      Catch::Contains("split.count 0 is not a number of parts"));
  }
  SECTION("a single file's split.tensors.count is its own tensor count") {
    write_part(dir / "one.gguf", {0, 1, 2}, {"t.a"});
    CHECK_THROWS_WITH(GgufFile::open(dir / "one.gguf"),
                      Catch::Contains("split.tensors.count is 2 but the file holds 1 tensors"));
    const std::string bytes = read_whole(dir / "one.gguf");
    CHECK_THROWS_WITH(view(bytes),
                      Catch::Contains("split.tensors.count is 2 but the file holds 1"));
  }
  SECTION("split keys of a type that is not an integer") {
    GgufMetadata md;
    md.set("split.count", GgufValue::of("three"));
    GgufWriter w(dir / "s.gguf", md, {});
    w.commit();
    CHECK_THROWS_WITH(GgufFile::open(dir / "s.gguf"),
                      Catch::Contains("key 'split.count' is string, not an unsigned integer"));
  }
}

// Run by hand (remat_formats_tests "[.gguf_corpus]") to rewrite tests/fuzz/gguf_corpus/: a few
// tiny valid files from the writer and a few damaged ones, named valid_* and invalid_*.
TEST_CASE("write the GGUF fuzzer's seed corpus", "[.gguf_corpus]") {
  namespace fs = std::filesystem;
  const fs::path out = fs::path(REMAT_SOURCE_DIR) / "tests/fuzz/gguf_corpus";
  fs::create_directories(out);
  const auto write = [&](const std::string& name, const GgufMetadata& md,
                         const std::vector<GgufTensorSpec>& specs) {
    GgufWriter w(out / name, md, specs);
    for (const auto& s : specs) {
      std::string bytes(gguf_tensor_bytes(s), '\0');
      for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i % 61);
      w.write(bytes_of(bytes));
    }
    w.commit();
  };
  GgufMetadata md;
  md.set("general.architecture", GgufValue::of("llama"));
  md.set("llama.block_count", GgufValue::of<uint32_t>(1));
  md.set("llama.rope.freq_base", GgufValue::of(10000.0f));
  md.set("t.i64", GgufValue::of<int64_t>(-7));
  md.set("t.f64", GgufValue::of(0.5));
  md.set("t.bool", GgufValue::of(true));
  md.set("tokenizer.ggml.tokens", GgufValue::array(std::vector<std::string>{"<s>", "a", "b"}));
  md.set("tokenizer.ggml.scores", GgufValue::array(std::vector<float>{0, -1, -2}));
  md.set("tokenizer.ggml.token_type", GgufValue::array(std::vector<int32_t>{3, 1, 1}));
  md.set("t.a.u8", GgufValue::array(std::vector<uint8_t>{1, 2}));
  md.set("t.a.bool", GgufValue::array(std::vector<bool>{false, true}));
  write("valid_every_type.gguf", md,
        {{"token_embd.weight", GgmlType::f32, {4, 2}}, {"blk.0.q", GgmlType::q4_0, {32}}});
  GgufMetadata md64;
  md64.set("general.alignment", GgufValue::of<uint32_t>(64));
  write("valid_align64.gguf", md64,
        {{"a", GgmlType::f16, {3}}, {"b", GgmlType::bf16, {2, 2}}, {"c", GgmlType::q4_k, {256}}});
  write("valid_no_tensors.gguf", md, {});
  GgufMetadata split;
  split.set("split.no", GgufValue::of<uint16_t>(1));
  split.set("split.count", GgufValue::of<uint16_t>(2));
  split.set("split.tensors.count", GgufValue::of<int32_t>(3));
  write("valid_split_part.gguf", split, {{"x", GgmlType::f32, {2}}});
  write("valid_unsupported_type.gguf", GgufMetadata(), {{"iq", GgmlType::iq4_nl, {32}}});
  Raw overlap = Raw::header(2, 0);
  overlap.info("a", {8}, 0, 0).info("b", {8}, 0, 0).pad(32).zeros(32);
  write_whole(out / "invalid_overlap.gguf", overlap.b);
  write_whole(out / "invalid_truncated.gguf",
              read_whole(out / "valid_every_type.gguf").substr(0, 150));
  write_whole(out / "invalid_version1.gguf", Raw::header(0, 0, 1).b);
  Raw rows = Raw::header(1, 0);
  rows.info("q", {20}, 2, 0).pad(32).zeros(32);
  write_whole(out / "invalid_rows_not_blocks.gguf", rows.b);
}
