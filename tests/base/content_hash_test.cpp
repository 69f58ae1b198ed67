// FNV-1a 64 over words (base/content_hash.h): byte-wise FNV-1a on inputs shorter than a word (the
// reference's published values), the same digest however the input is split, and file identities
// that change with a file's contents.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/content_hash.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

uint64_t hash_of(std::string_view s) {
  Fnv1a64 h;
  h.update(s);
  return h.digest();
}

}  // namespace

TEST_CASE("short inputs hash as byte-wise FNV-1a 64 does") {
  CHECK(hash_of("") == 0xcbf29ce484222325ull);
  CHECK(hash_of("a") == 0xaf63dc4c8601ec8cull);
  CHECK(hash_of("foobar") == 0x85944171f73967e8ull);
}

TEST_CASE("the digest does not depend on how the input is split") {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 37 + 11);
  const uint64_t whole = hash_of(text);
  for (std::size_t piece : {1u, 3u, 7u, 8u, 9u, 64u, 999u}) {
    Fnv1a64 h;
    for (std::size_t at = 0; at < text.size(); at += piece)
      h.update(std::string_view(text).substr(at, piece));
    CHECK(h.digest() == whole);
  }
  // Every byte counts, the last one included.
  std::string changed = text;
  changed.back() ^= 1;
  CHECK(hash_of(changed) != whole);
  CHECK(hash_of(text.substr(0, 999)) != whole);
}

TEST_CASE("hashes print as 16 hex digits and read back") {
  CHECK(hash_hex(0xaf63dc4c8601ec8cull) == "af63dc4c8601ec8c");
  CHECK(hash_hex(1) == "0000000000000001");
  CHECK(parse_hash_hex("af63dc4c8601ec8c", "h") == 0xaf63dc4c8601ec8cull);
  CHECK_THROWS_WITH(parse_hash_hex("AF63", "\"hash\""), "\"hash\" is not 16 hex digits");
  CHECK_THROWS_WITH(parse_hash_hex("af63dc4c8601ec8g", "h"), "h is not 16 hex digits");
}

TEST_CASE("a file's identity is its size and hash, a folder's covers its files' names") {
  const fs::path dir = fs::temp_directory_path() / ("remat_hash_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "tok");
  std::ofstream(dir / "a.txt", std::ios::binary) << "foobar";
  const FileIdentity a = identify_file(dir / "a.txt");
  CHECK(a.bytes == 6);
  CHECK(a.fnv1a64w == 0x85944171f73967e8ull);
  std::ofstream(dir / "tok" / "vocab.json") << "{}";
  std::ofstream(dir / "tok" / "merges.txt") << "a b";
  const FileIdentity t = identify_file(dir / "tok");
  CHECK(t.bytes == 5);
  fs::rename(dir / "tok" / "merges.txt", dir / "tok" / "other.txt");
  CHECK_FALSE(identify_file(dir / "tok").same_contents(t));
  CHECK_THROWS_WITH(identify_file(dir / "missing"),
                    Catch::Contains("missing: cannot open (No such file"));
  fs::remove_all(dir);
}
