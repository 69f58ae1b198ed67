// GGUF: writer → reader round trips (metadata of every type, tensors of several types, shapes and
// alignments, through view() and open()), streamed writes and reads, the metadata getters, and
// the fuzzer's seed corpus.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "base/half_float.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "tests/formats/gguf_test_bytes.h"

using namespace remat;
using namespace remat::gguf_test;

namespace {

GgufMetadata every_type_metadata() {
  GgufMetadata md;
  md.set("general.architecture", GgufValue::of("llama"));
  md.set("t.u8", GgufValue::of<uint8_t>(200));
  md.set("t.i8", GgufValue::of<int8_t>(-100));
  md.set("t.u16", GgufValue::of<uint16_t>(60000));
  md.set("t.i16", GgufValue::of<int16_t>(-30000));
  md.set("t.u32", GgufValue::of<uint32_t>(4000000000u));
  md.set("t.i32", GgufValue::of<int32_t>(-2000000000));
  md.set("t.u64", GgufValue::of<uint64_t>((1ull << 63) + 5));
  md.set("t.i64", GgufValue::of<int64_t>(-(1ll << 62)));
  md.set("t.f32", GgufValue::of(0.5f));
  md.set("t.f64", GgufValue::of(-1e300));
  md.set("t.bool", GgufValue::of(true));
  md.set("t.empty_string", GgufValue::of(""));
  md.set("t.a.u8", GgufValue::array(std::vector<uint8_t>{1, 2, 255}));
  md.set("t.a.i8", GgufValue::array(std::vector<int8_t>{-1}));
  md.set("t.a.u16", GgufValue::array(std::vector<uint16_t>{7, 65535}));
  md.set("t.a.i16", GgufValue::array(std::vector<int16_t>{-7}));
  md.set("t.a.u32", GgufValue::array(std::vector<uint32_t>{3, 4000000000u}));
  md.set("t.a.i32", GgufValue::array(std::vector<int32_t>{-5, 7}));
  md.set("t.a.u64", GgufValue::array(std::vector<uint64_t>{1ull << 40}));
  md.set("t.a.i64", GgufValue::array(std::vector<int64_t>{-(1ll << 40), 3}));
  md.set("t.a.f32", GgufValue::array(std::vector<float>{0.25f, -1.0f}));
  md.set("t.a.f64", GgufValue::array(std::vector<double>{}));
  md.set("t.a.bool", GgufValue::array(std::vector<bool>{true, false, true}));
  md.set("tokenizer.ggml.tokens",
         GgufValue::array(std::vector<std::string>{"<s>", "", "h\xc3\xa9llo"}));
  md.set("t.a.no_strings", GgufValue::array(std::vector<std::string>{}));
  return md;
}

std::string pattern(std::size_t n, int seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + seed * 13) & 0xFF);
  return s;
}

template <class T>
std::string bytes_of_values(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string read_tensor(const GgufFile& f, const GgufTensor& t, std::size_t piece) {
  std::string out(t.bytes, '\0');
  for (uint64_t at = 0; at < t.bytes; at += piece) {
    const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(piece, t.bytes - at));
    f.read(t, at, std::as_writable_bytes(std::span(out.data() + at, n)));
  }
  return out;
}

}  // namespace

TEST_CASE("GGUF round-trips metadata of every type and tensors of several types and shapes") {
  const uint32_t alignment = GENERATE(32u, 64u);
  TempDir dir("roundtrip");
  GgufMetadata md = every_type_metadata();
  if (alignment != 32) md.set("general.alignment", GgufValue::of<uint32_t>(alignment));
  const std::vector<GgufTensorSpec> specs = {
      {"token_embd.weight", GgmlType::f32, {5, 3}}, {"norm.weight", GgmlType::f16, {7}},
      {"blk.0.bf16", GgmlType::bf16, {3, 2, 2}},    {"blk.0.q4_0", GgmlType::q4_0, {64, 2}},
      {"blk.0.q4_k", GgmlType::q4_k, {256}},        {"blk.0.q8_0", GgmlType::q8_0, {32, 1, 1, 2}},
  };
  std::vector<float> f32(15), f16(7), bf16(12);
  for (std::size_t i = 0; i < f32.size(); ++i) f32[i] = 0.1f * static_cast<float>(i) - 0.7f;
  for (std::size_t i = 0; i < f16.size(); ++i) f16[i] = 0.25f * static_cast<float>(i) - 1.0f;
  for (std::size_t i = 0; i < bf16.size(); ++i) bf16[i] = -3.0f + static_cast<float>(i);
  const std::string blocks = pattern(72 + 144 + 68, 1);  // q4_0, q4_K and q8_0, one stream

  std::vector<std::string> expected;
  expected.push_back(bytes_of_values(f32));
  std::vector<uint16_t> halves;
  for (float v : f16) halves.push_back(float_to_f16(v));
  expected.push_back(bytes_of_values(halves));
  halves.clear();
  for (float v : bf16) halves.push_back(float_to_bf16(v));
  expected.push_back(bytes_of_values(halves));
  expected.push_back(blocks.substr(0, 72));
  expected.push_back(blocks.substr(72, 144));
  expected.push_back(blocks.substr(216, 68));

  const auto path = dir / "model.gguf";
  {
    GgufWriter w(path, md, specs);
    w.write(std::span(f32).first(4));
    w.write(std::span(f32).subspan(4));
    w.write(std::span(f16).first(3));
    w.write(std::span(f16).subspan(3));
    w.write(bf16);
    for (std::size_t at = 0; at < blocks.size(); at += 5)  // pieces across tensor boundaries
      w.write(bytes_of(blocks.substr(at, 5)));
    CHECK(w.bytes_written() == w.total_bytes());
    w.commit();
    CHECK(std::filesystem::file_size(path) == w.total_bytes());
  }
  const std::string file = read_whole(path);
  for (bool through_open : {false, true}) {
    INFO((through_open ? "open()" : "view()"));
    const GgufFile f = through_open ? GgufFile::open(path) : view(file, path.string());
    CHECK(f.version() == 3);
    CHECK(f.origin() == path.string());
    CHECK(f.metadata() == md);
    REQUIRE(f.parts().size() == 1);
    CHECK(f.parts()[0].alignment == alignment);
    CHECK(f.parts()[0].data_offset % alignment == 0);
    CHECK(f.parts()[0].file_bytes == file.size());
    CHECK(f.split_count() == 1);
    REQUIRE(f.tensors().size() == specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const GgufTensor& t = f.tensors()[i];
      INFO(t.name);
      CHECK(t.name == specs[i].name);
      CHECK(t.type == specs[i].type);
      CHECK(t.ne == specs[i].ne);
      CHECK(t.bytes == expected[i].size());
      CHECK(t.part == 0);
      CHECK((t.offset - f.parts()[0].data_offset) % alignment == 0);
      CHECK(f.tensor(t.name) == &t);
      CHECK(read_tensor(f, t, t.bytes) == expected[i]);
      CHECK(read_tensor(f, t, 7) == expected[i]);
    }
    CHECK(f.tensor("missing") == nullptr);
    CHECK(f.tensors()[0].shape() == std::vector<int64_t>{3, 5});
    CHECK(f.tensors()[2].elements() == 12);
    CHECK(f.tensors()[2].rows() == 4);
    CHECK_NOTHROW(f.check_supported());
  }
}

TEST_CASE("GGUF reads version 2 files, which differ from version 3 only in the version field") {
  GgufMetadata md;
  md.set("general.name", GgufValue::of("v2"));
  TempDir dir("v2");
  GgufWriter w(dir / "v2.gguf", md, {{"w", GgmlType::f32, {2}}});
  w.write(std::vector<float>{1.0f, 2.0f});
  w.commit();
  std::string bytes = read_whole(dir / "v2.gguf");
  bytes[4] = 2;
  const GgufFile f = view(bytes);
  CHECK(f.version() == 2);
  CHECK(f.metadata().string("general.name") == "v2");
  float values[2];
  f.read(f.tensors()[0], 0, std::as_writable_bytes(std::span(values)));
  CHECK(values[1] == 2.0f);
}

TEST_CASE("GGUF metadata getters convert without loss and name the type on a mismatch") {
  GgufMetadata in = every_type_metadata();
  in.set("t.neg", GgufValue::of<int32_t>(-3));
  in.set("t.a.big", GgufValue::array(std::vector<uint32_t>{1, 4000000000u}));
  in.set("t.a.huge", GgufValue::array(std::vector<uint64_t>{1ull << 63}));
  TempDir dir("getters");
  GgufWriter w(dir / "m.gguf", in, {});
  w.commit();
  const std::string bytes = read_whole(dir / "m.gguf");
  const GgufFile file = view(bytes);
  const GgufMetadata& md = file.metadata();
  CHECK(md.string("general.architecture") == "llama");
  CHECK(md.uint("t.u8") == 200u);
  CHECK(md.uint("t.u64") == (1ull << 63) + 5);
  CHECK(md.integer("t.i8") == -100);
  CHECK(md.integer("t.u32") == 4000000000);
  CHECK(md.number("t.f32") == 0.5);
  CHECK(md.number("t.f64") == -1e300);
  CHECK(md.boolean("t.bool") == true);
  CHECK(md.strings("tokenizer.ggml.tokens") == std::vector<std::string>{"<s>", "", "h\xc3\xa9llo"});
  CHECK(md.floats("t.a.f32") == std::vector<float>{0.25f, -1.0f});
  CHECK(md.floats("t.a.f64") == std::vector<float>{});
  CHECK(md.int32s("t.a.i8") == std::vector<int32_t>{-1});
  CHECK(md.int32s("t.a.u16") == std::vector<int32_t>{7, 65535});
  CHECK(md.integers("t.a.u32") == std::vector<int64_t>{3, 4000000000});
  CHECK(md.find("t.a.bool")->as_bool(2) == true);
  CHECK(md.find("t.a.bool")->size() == 3);
  CHECK_FALSE(md.string("absent").has_value());
  CHECK_FALSE(md.strings("absent").has_value());
  CHECK_FALSE(md.uint("absent").has_value());
  // Each message starts with the origin and names the key.
  const auto refused = [](const std::string& s) { return Catch::StartsWith("t.gguf: key '" + s); };
  CHECK_THROWS_WITH(md.string("t.u32"), refused("t.u32' is uint32, not a string"));
  CHECK_THROWS_WITH(md.uint("t.f32"), refused("t.f32' is float32, not an unsigned integer"));
  CHECK_THROWS_WITH(md.uint("t.neg"), refused("t.neg' is -3, not an unsigned integer"));
  CHECK_THROWS_WITH(md.integer("general.architecture"),
                    refused("general.architecture' is string, not an integer within int64"));
  CHECK_THROWS_WITH(md.integer("t.a.i32"), refused("t.a.i32' is array of int32, not an integer"));
  CHECK_THROWS_WITH(md.number("t.i32"), refused("t.i32' is int32, not a float32 or float64"));
  CHECK_THROWS_WITH(md.boolean("t.u8"), refused("t.u8' is uint8, not a bool"));
  CHECK_THROWS_WITH(md.strings("general.architecture"),
                    refused("general.architecture' is string, not an array of string"));
  CHECK_THROWS_WITH(md.floats("tokenizer.ggml.tokens"),
                    refused("tokenizer.ggml.tokens' is array of string, not an array of float32 or "
                            "float64"));
  CHECK_THROWS_WITH(md.int32s("t.a.f32"),
                    refused("t.a.f32' is array of float32, not an array of integers"));
  CHECK_THROWS_WITH(md.int32s("t.a.big"),
                    refused("t.a.big' element 1 is 4000000000, beyond int32"));
  CHECK_THROWS_WITH(md.integers("t.a.huge"),
                    refused("t.a.huge' element 0 is 9223372036854775808, beyond int64"));
}

TEST_CASE("GGUF metadata keeps file order, set() replaces in place and erase() removes") {
  GgufMetadata md("m");
  md.set("b", GgufValue::of<uint32_t>(1));
  md.set("a", GgufValue::of("x"));
  md.set("b", GgufValue::of<uint32_t>(2));
  REQUIRE(md.entries().size() == 2);
  CHECK(md.entries()[0].key == "b");
  CHECK(md.uint("b") == 2u);
  md.erase("b");
  CHECK(md.entries().size() == 1);
  CHECK(md.string("a") == "x");
  CHECK_FALSE(md.contains("b"));
  CHECK_THROWS_WITH(md.set("", GgufValue::of("x")), Catch::Contains("key cannot be empty"));
}

TEST_CASE("GGUF read() streams pieces and refuses ranges outside the tensor") {
  TempDir dir("read");
  GgufWriter w(dir / "r.gguf", GgufMetadata(),
               {{"a", GgmlType::f32, {3}}, {"b", GgmlType::f32, {2}}});
  w.write(std::vector<float>{1, 2, 3, 4, 5});
  w.commit();
  const GgufFile f = GgufFile::open(dir / "r.gguf");
  const GgufTensor& b = *f.tensor("b");
  float v = 0;
  f.read(b, 4, std::as_writable_bytes(std::span(&v, 1)));
  CHECK(v == 5.0f);
  std::byte two[2];
  CHECK_THROWS_AS(f.read(b, 7, two), std::out_of_range);
  CHECK_THROWS_WITH(f.read(b, 9, std::span(two, 0)), Catch::Contains("outside tensor 'b'"));
  CHECK_NOTHROW(f.read(b, 8, std::span(two, 0)));
  // The file shrinking after open() is reported, not read past.
  std::filesystem::resize_file(dir / "r.gguf", f.tensor("a")->offset + 4);
  CHECK_THROWS_WITH(f.read(b, 0, two), Catch::Contains("ended early"));
}

TEST_CASE("GGUF open() refuses folders and missing files by name") {
  TempDir dir("open");
  CHECK_THROWS_WITH(GgufFile::open(dir.path), Catch::Contains("is a directory"));
  CHECK_THROWS_WITH(GgufFile::open(dir / "missing.gguf"),
                    Catch::StartsWith((dir / "missing.gguf").string() + ": cannot open"));
}

TEST_CASE("the GGUF fuzzer's seed corpus parses, or is refused, as its file names say") {
  namespace fs = std::filesystem;
  std::size_t files = 0, parsed = 0;
  for (const char* folder : {"tests/fuzz/gguf_corpus", "tests/fuzz/gguf_regressions"}) {
    const fs::path dir = fs::path(REMAT_SOURCE_DIR) / folder;
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string bytes = read_whole(e.path());
      const std::string name = e.path().filename().string();
      INFO(e.path().string());
      ++files;
      try {
        const GgufFile f = view(bytes, e.path().string());
        ++parsed;
        CHECK(name.rfind("valid_", 0) == 0);
        for (const GgufTensor& t : f.tensors()) CHECK(read_tensor(f, t, 64).size() == t.bytes);
      } catch (const std::invalid_argument& err) {
        CHECK(name.rfind("valid_", 0) != 0);
        CHECK(std::string(err.what()).rfind(e.path().string() + ": ", 0) == 0);
      }
    }
  }
  CHECK(files >= 8);
  CHECK(parsed >= 5);
}
