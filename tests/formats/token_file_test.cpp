#include "formats/token_file.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

using namespace remat;
namespace fs = std::filesystem;

namespace {

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() /
         ("remat_token_file_" + std::to_string(::getpid()) + "_" + name);
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int32_t field(const std::string& bytes, int i) {
  int32_t v;
  std::memcpy(&v, bytes.data() + 4 * i, 4);
  return v;
}

}  // namespace

TEST_CASE("token files use llm.c's uint16 layout for GPT-2-sized vocabularies", "[text]") {
  const fs::path p = temp("u16.bin");
  const std::vector<uint32_t> tokens{0, 50256, 65535, 7};
  write_token_file(p, tokens, 50257);
  const std::string bytes = bytes_of(p);
  REQUIRE(bytes.size() == 1024 + 2 * tokens.size());
  CHECK(field(bytes, 0) == 20240520);
  CHECK(field(bytes, 1) == 1);
  CHECK(field(bytes, 2) == 4);
  for (int i = 3; i < 256; ++i) CHECK(field(bytes, i) == 0);
  CHECK(is_token_file(bytes));
  CHECK(read_token_file(p) == tokens);
  fs::remove(p);
}

TEST_CASE("vocabularies over 65536 ids use llm.c's uint32 layout", "[text]") {
  const fs::path p = temp("u32.bin");
  const std::vector<uint32_t> tokens{128000, 1, 200000};
  write_token_file(p, tokens, 200019);
  const std::string bytes = bytes_of(p);
  REQUIRE(bytes.size() == 1024 + 4 * tokens.size());
  CHECK(field(bytes, 0) == 20240801);
  CHECK(field(bytes, 1) == 7);
  CHECK(read_token_file(p) == tokens);
  fs::remove(p);
}

TEST_CASE("a token over the uint16 layout is refused and leaves no file", "[text]") {
  const fs::path p = temp("refused.bin");
  CHECK_THROWS_WITH(write_token_file(p, {1, 70000}, 65536), Catch::Contains("token 1 is id 70000"));
  CHECK_FALSE(fs::exists(p));
}

TEST_CASE("malformed token files are refused naming what is wrong", "[text]") {
  std::string header(1024, '\0');
  int32_t h[3] = {20240520, 1, 3};
  std::memcpy(header.data(), h, sizeof h);
  CHECK(parse_token_file(header + std::string(6, '\0'), "x").size() == 3);
  CHECK_THROWS_WITH(parse_token_file(header + std::string(5, '\0'), "x"),
                    "x: the header says 3 tokens but the file holds 5 bytes of 2-byte tokens");
  CHECK_THROWS_WITH(parse_token_file("short", "x"), Catch::Contains("too short"));
  h[1] = 2;
  std::memcpy(header.data(), h, sizeof h);
  CHECK_THROWS_WITH(parse_token_file(header, "x"),
                    Catch::Contains("not an llm.c token file (magic 20240520, version 2"));
  CHECK_FALSE(is_token_file("1 2 3"));
}
