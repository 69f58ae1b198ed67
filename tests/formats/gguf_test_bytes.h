// Helpers for the GGUF tests: a builder of raw GGUF bytes (to make the damaged files the writer
// never would), temporary folders, whole-file reads, and the refusal check every case uses.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "formats/gguf.h"

namespace remat::gguf_test {

// GGUF bytes written field by field, little-endian.
struct Raw {
  std::string b;

  template <class T>
  Raw& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return *this;
  }
  Raw& u8(uint8_t v) { return put(v); }
  Raw& u32(uint32_t v) { return put(v); }
  Raw& u64(uint64_t v) { return put(v); }
  Raw& str(const std::string& s) {
    u64(s.size());
    b += s;
    return *this;
  }
  Raw& zeros(std::size_t n) {
    b.append(n, '\0');
    return *this;
  }
  Raw& pad(std::size_t alignment) { return zeros((alignment - b.size() % alignment) % alignment); }

  // Magic, version, tensor count, metadata count.
  static Raw header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    Raw r;
    r.b = "GGUF";
    return r.u32(version).u64(n_tensors).u64(n_kv);
  }
  Raw& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  Raw& kv_str(const std::string& key, const std::string& v) { return str(key).u32(8).str(v); }
  // A tensor info; `type` is the ggml type id.
  Raw& info(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type,
            uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }
};

inline std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

inline GgufFile view(const std::string& bytes, const std::string& origin = "t.gguf") {
  return GgufFile::view(bytes_of(bytes), origin);
}

// view() must refuse `bytes` with std::invalid_argument "t.gguf: ...<fragment>...".
inline void expect_refused(const std::string& bytes, const std::string& fragment) {
  INFO("expecting a refusal containing: " << fragment);
  CHECK_THROWS_WITH(view(bytes), Catch::StartsWith("t.gguf: ") && Catch::Contains(fragment));
}

inline std::string read_whole(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline void write_whole(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// A fresh folder under the system's temporary folder, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("remat_gguf_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::filesystem::path operator/(const std::string& name) const { return path / name; }
};

}  // namespace remat::gguf_test
