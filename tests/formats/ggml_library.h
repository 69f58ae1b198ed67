// ggml itself, for the GGUF tests to compare remat with: libggml-base.so from the prebuilt
// llama.cpp that @node-llama-cpp/linux-x64 ships (pinned in .ci/fetch-test-data, fetched into
// build-data/npm), opened with dlopen. The few C functions used are declared here, not taken from
// ggml's headers. Without the library a test fails naming the fetch script when npm is installed,
// and is skipped with a warning otherwise, or on a machine that cannot load an x86-64 glibc
// library.
#pragma once

#include <dlfcn.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "formats/gguf_types.h"

namespace remat::test {

inline std::filesystem::path ggml_library_path() {
  return std::filesystem::path(REMAT_SOURCE_DIR) / "build-data" / "npm" / "node_modules" /
         "@node-llama-cpp" / "linux-x64" / "bins" / "linux-x64" / "libggml-base.so";
}

// GGML_TYPE_COUNT of the pinned build: its type_traits table has 43 entries (ids 0..42; 40 is
// nvfp4, 41 q1_0). ggml_type_name and friends index that table without a bounds check.
constexpr uint32_t kPinnedGgmlTypeCount = 43;

struct GgmlLibrary {
  // ggml.h, with enum ggml_type as int.
  using TypeName = const char* (*)(int type);
  using BlockSize = int64_t (*)(int type);
  using TypeSize = size_t (*)(int type);
  using RequiresImatrix = bool (*)(int type);
  using QuantizeChunk = size_t (*)(int type, const float* src, void* dst, int64_t start,
                                   int64_t nrows, int64_t n_per_row, const float* imatrix);
  using ToFloat = void (*)(const void* x, float* y, int64_t k);
  // struct ggml_type_traits of the pinned ggml.h (checked against the functions above on use).
  struct TypeTraits {
    const char* type_name;
    int64_t blck_size;
    int64_t blck_size_interleave;
    size_t type_size;
    bool is_quantized;
    ToFloat to_float;
    void* from_float_ref;
  };
  using GetTypeTraits = const TypeTraits* (*)(int type);

  void* handle = nullptr;
  TypeName type_name = nullptr;
  BlockSize blck_size = nullptr;
  TypeSize type_size = nullptr;
  RequiresImatrix requires_imatrix = nullptr;
  QuantizeChunk quantize_chunk = nullptr;
  GetTypeTraits type_traits = nullptr;

  // ggml's to_float for type t (dequantize_row_q4_K, ggml_fp16_to_fp32_row, ...): the type
  // traits' function, which must be the exported function of that name; nullptr for none (f32).
  ToFloat to_float(GgmlType t) const {
    const int id = int(t);
    const TypeTraits* traits = type_traits(id);
    REQUIRE(traits->type_name == type_name(id));  // the declared struct layout is ggml's
    REQUIRE(traits->blck_size == blck_size(id));
    REQUIRE(traits->type_size == type_size(id));
    if (!traits->to_float) return nullptr;
    const std::string name = t == GgmlType::f16    ? "ggml_fp16_to_fp32_row"
                             : t == GgmlType::bf16 ? "ggml_bf16_to_fp32_row"
                                                   : "dequantize_row_" + std::string(type_name(id));
    INFO("ggml's to_float for " << type_name(id) << " is " << name);
    REQUIRE(reinterpret_cast<void*>(traits->to_float) == dlsym(handle, name.c_str()));
    return traits->to_float;
  }
};

inline bool have_npm() {
  return std::system("npm --version >/dev/null 2>&1") == 0;
}

// Opens the library once. Returns nullptr after a WARN when the test is to be skipped; FAILs when
// npm is installed but the library was not fetched, or when it does not load.
inline const GgmlLibrary* ggml_library() {
#if !(defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__))
  WARN(
      "SKIPPED: the pinned ggml library (@node-llama-cpp/linux-x64) is an x86-64 glibc Linux "
      "build, which this machine cannot load (.ci/fetch-test-data does not fetch it here)");
  return nullptr;
#else
  const std::filesystem::path path = ggml_library_path();
  if (!std::filesystem::exists(path)) {
    if (!have_npm()) {
      WARN(
          "SKIPPED: npm is not installed, so ggml's library (@node-llama-cpp/linux-x64) was not "
          "fetched: missing " +
          path.string());
      return nullptr;
    }
    FAIL("missing " + path.string() + "; run .ci/fetch-test-data (needs node and npm)");
  }
  static std::string error;
  static const GgmlLibrary library = [&] {
    GgmlLibrary lib;
    lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib.handle) {
      error = "cannot load " + path.string() + ": " + dlerror();
      return lib;
    }
    auto symbol = [&](const char* name) {
      void* s = dlsym(lib.handle, name);
      if (!s && error.empty()) error = path.string() + " has no symbol " + name;
      return s;
    };
    lib.type_name = reinterpret_cast<GgmlLibrary::TypeName>(symbol("ggml_type_name"));
    lib.blck_size = reinterpret_cast<GgmlLibrary::BlockSize>(symbol("ggml_blck_size"));
    lib.type_size = reinterpret_cast<GgmlLibrary::TypeSize>(symbol("ggml_type_size"));
    lib.requires_imatrix =
        reinterpret_cast<GgmlLibrary::RequiresImatrix>(symbol("ggml_quantize_requires_imatrix"));
    lib.quantize_chunk =
        reinterpret_cast<GgmlLibrary::QuantizeChunk>(symbol("ggml_quantize_chunk"));
    lib.type_traits = reinterpret_cast<GgmlLibrary::GetTypeTraits>(symbol("ggml_get_type_traits"));
    return lib;
  }();
  if (!error.empty()) FAIL(error);
  return &library;
#endif
}

}  // namespace remat::test
