// safetensors: round trip, F16/BF16 reading, and every malformed-file rule with its message.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "formats/safetensors.h"

using namespace remat;

namespace {

std::string with_header(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xFF);
  return out + json + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

void expect_error(const std::string& bytes, const std::string& fragment) {
  INFO("expecting an error containing: " << fragment);
  CHECK_THROWS_WITH(parse_safetensors(bytes, "w.safetensors"),
                    Catch::Contains(fragment) && Catch::StartsWith("w.safetensors: "));
}

}  // namespace

TEST_CASE("safetensors round-trips names, shapes, values and metadata byte-exactly") {
  std::vector<NamedTensor> ts = {{"wte.weight", {2, 3}, {1, 2, 3, 4, 5, -6.5f}, "F32"},
                                 {"ln_f.bias", {3}, {0.25f, 0, -1}, "F32"}};
  const std::string bytes = serialize_safetensors(ts, {{"n_head", "4"}});
  CHECK((bytes.size() - 8 - 9 * 4) % 8 == 0);  // data section 8-byte aligned
  auto back = parse_safetensors(bytes, "mem");
  REQUIRE(back.tensors.size() == 2);
  CHECK(back.metadata.at("n_head") == "4");
  CHECK(back.find("wte.weight")->values == ts[0].values);
  CHECK(back.find("wte.weight")->shape == ts[0].shape);
  CHECK(back.find("ln_f.bias")->values == ts[1].values);
  CHECK(serialize_safetensors(back.tensors, back.metadata) == bytes);  // load -> save identical
}

TEST_CASE("F16 and BF16 tensors are read as float") {
  // 1.0 = 0x3C00 (F16), 0x3F80 (BF16); -2.5 = 0xC100 (F16), 0xC020 (BF16); 2^-24 = F16 subnormal 1.
  std::string f16 = {'\x00', '\x3C', '\x00', '\xC1', '\x01', '\x00'};
  std::string bf16 = {'\x80', '\x3F', '\x20', '\xC0'};
  auto c =
      parse_safetensors(with_header(R"({"a":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},)"
                                    R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[6,10]}})",
                                    f16 + bf16),
                        "m");
  CHECK(c.find("a")->values == std::vector<float>{1.0f, -2.5f, std::ldexp(1.0f, -24)});
  CHECK(c.find("b")->values == std::vector<float>{1.0f, -2.5f});
  CHECK(c.find("a")->source_dtype == "F16");
}

TEST_CASE("malformed safetensors files are refused with a message that says why") {
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  expect_error("abc", "too short");
  std::string huge(8, '\0');
  huge[5] = 0x10;  // 2^44 bytes
  expect_error(huge + "{}", "exceeds the 100 MB limit");
  std::string past = with_header("{}", "");
  past[0] = 50;
  expect_error(past, "past the end of the file");
  expect_error(with_header("{not json", ""), "invalid header");
  expect_error(with_header("[1,2]", ""), "not a JSON object");
  expect_error(
      with_header(R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", floats({0, 0})),
      "dtype I64");
  expect_error(
      with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", floats({0, 0})),
      "shape × F32 is 12 bytes");
  expect_error(
      with_header("{" + ok_entry + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                  floats({0, 0})),
      "overlaps");
  expect_error(
      with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", floats({0, 0})),
      "belong to no tensor");
  expect_error(with_header("{" + ok_entry + "}", floats({0, 0, 0})), "trailing bytes");
  expect_error(
      with_header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", floats({0, 0})),
      "past the data section");
  expect_error(with_header("{" + ok_entry + "}", floats({1, std::nanf("")})),
               "non-finite value at element 1");
  expect_error(
      with_header(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", floats({0, 0})),
      "invalid shape");
  expect_error(with_header(R"({"a":{"dtype":"F32","shape":[2]}})", floats({0, 0})), "data_offsets");
  expect_error(with_header(R"({"__metadata__":{"k":1}})", ""), "is not a string");
}

TEST_CASE("write_safetensors replaces a file atomically and leaves no temporary behind") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("remat_st_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "w.safetensors";
  write_safetensors(file, {{"x", {1}, {1.0f}, "F32"}});
  write_safetensors(file, {{"x", {2}, {2.0f, 3.0f}, "F32"}});
  CHECK(read_safetensors(file).find("x")->values == std::vector<float>{2.0f, 3.0f});
  std::size_t entries = 0;
  for (auto& e : fs::directory_iterator(dir)) (void)e, ++entries;
  CHECK(entries == 1);
  CHECK_THROWS_WITH(read_safetensors(dir), Catch::Contains("is a directory"));
  CHECK_THROWS_WITH(read_safetensors(dir / "missing.safetensors"), Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(
      write_safetensors(dir / "no" / "such" / "dir.safetensors", {{"x", {1}, {1.0f}, "F32"}}),
      Catch::Contains("cannot write"));
  fs::remove_all(dir);
}

TEST_CASE("hostile safetensors headers are refused without deep recursion or huge allocations") {
  // 100,000 nested arrays: the JSON parser stops at its depth limit instead of the stack's.
  expect_error(
      with_header("{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}", ""),
      "nesting too deep");
  // Millions of tiny values in one header: refused before the parser builds them.
  std::string shape;
  for (int i = 0; i < 2'100'000; ++i) shape += "1,";
  expect_error(
      with_header(R"({"a":{"dtype":"F32","shape":[)" + shape + R"(1],"data_offsets":[0,4]}})",
                  floats({1})),
      "JSON values");
  // A shape of 2^64 elements with 8 bytes of data: refused by arithmetic, nothing allocated.
  expect_error(
      with_header(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                  floats({0, 0})),
      "too large");
  expect_error(
      with_header(
          R"({"a":{"dtype":"F32","shape":[1000000000000],"data_offsets":[0,4000000000000]}})",
          floats({0, 0})),
      "past the data section");
}

TEST_CASE("the fuzzer's seed corpus and every input that once crashed it parse or are refused") {
  namespace fs = std::filesystem;
  std::size_t files = 0, parsed = 0;
  for (const char* folder : {"tests/fuzz/corpus", "tests/fuzz/regressions"}) {
    for (const auto& e : fs::directory_iterator(fs::path(REMAT_SOURCE_DIR) / folder)) {
      std::ifstream f(e.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
      INFO(e.path().string());
      ++files;
      try {
        auto c = parse_safetensors(bytes, e.path().string());
        ++parsed;
        CHECK(e.path().filename().string().rfind("valid_", 0) == 0);
        CHECK(parse_safetensors(serialize_safetensors(c.tensors, c.metadata), "again")
                  .tensors.size() == c.tensors.size());
      } catch (const std::invalid_argument& err) {
        CHECK(e.path().filename().string().rfind("valid_", 0) != 0);
        CHECK(std::string(err.what()).rfind(e.path().string() + ": ", 0) == 0);
      }
    }
  }
  CHECK(files >= 8);
  CHECK(parsed >= 4);
}

TEST_CASE("write_safetensors refuses non-finite values and keeps the previous file") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("remat_st_nf_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "w.safetensors";
  write_safetensors(file, {{"x", {2}, {1.0f, 2.0f}, "F32"}});
  CHECK_THROWS_WITH(
      write_safetensors(file, {{"x", {2}, {1.0f, std::numeric_limits<float>::infinity()}, "F32"}}),
      Catch::Contains("tensor 'x' has a non-finite value at element 1") &&
          Catch::Contains("previous file is kept"));
  CHECK(read_safetensors(file).find("x")->values == std::vector<float>{1.0f, 2.0f});
  std::size_t entries = 0;
  for (auto& e : fs::directory_iterator(dir)) (void)e, ++entries;
  CHECK(entries == 1);
  fs::remove_all(dir);
}

TEST_CASE("a save removes temporaries that dead processes left for the same file, and only those") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("remat_st_stale_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto touch = [&](const std::string& name) { std::ofstream(dir / name) << "half a file"; };
  touch("w.safetensors.tmp-999999999");      // above any pid Linux hands out: its writer is dead
  touch("w.safetensors.tmp-1");              // pid 1 is alive: maybe a save in progress
  touch("other.safetensors.tmp-999999999");  // another target
  touch("w.safetensors.tmp-notapid");
  write_safetensors(dir / "w.safetensors", {{"x", {1}, {1.0f}, "F32"}});
  CHECK_FALSE(fs::exists(dir / "w.safetensors.tmp-999999999"));
  CHECK(fs::exists(dir / "w.safetensors.tmp-1"));
  CHECK(fs::exists(dir / "other.safetensors.tmp-999999999"));
  CHECK(fs::exists(dir / "w.safetensors.tmp-notapid"));
  CHECK(read_safetensors(dir / "w.safetensors").find("x")->values == std::vector<float>{1.0f});
  fs::remove_all(dir);
}
