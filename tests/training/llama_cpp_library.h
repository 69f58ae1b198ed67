// llama.cpp itself, for the tests that load what remat writes into it: libllama from the prebuilt
// x86-64 CPU libraries @node-llama-cpp/linux-x64 ships (build-data/npm), opened with dlopen, its
// functions typed by the llama.h of the source they were built from (build-data/llama.cpp; both
// pinned in .ci/fetch-test-data; CMake defines REMAT_HAVE_LLAMA_H when the header is there).
// Without them a test is skipped with a warning when node is not installed, and fails naming the
// fetch script otherwise, as the other reference-data tests do (tests/text/reference_data.h).
#pragma once

#include <dlfcn.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/text/reference_data.h"

#if REMAT_HAVE_LLAMA_H
#include <llama.h>
#endif

namespace remat::test {

inline std::filesystem::path llama_cpp_bins() {
  return npm_modules() / "@node-llama-cpp" / "linux-x64" / "bins" / "linux-x64";
}
inline std::filesystem::path llama_cpp_header() {
  return std::filesystem::path(REMAT_SOURCE_DIR) / "build-data" / "llama.cpp" / "include" /
         "llama.h";
}

#if REMAT_HAVE_LLAMA_H

struct LlamaCpp {
  void* handle = nullptr;
  decltype(&ggml_backend_load_all_from_path) load_backends = nullptr;
  decltype(&llama_log_set) log_set = nullptr;
  decltype(&llama_backend_init) backend_init = nullptr;
  decltype(&llama_model_default_params) model_default_params = nullptr;
  decltype(&llama_context_default_params) context_default_params = nullptr;
  decltype(&llama_model_load_from_file) model_load = nullptr;
  decltype(&llama_model_free) model_free = nullptr;
  decltype(&llama_init_from_model) init_from_model = nullptr;
  decltype(&llama_free) free = nullptr;
  decltype(&llama_batch_init) batch_init = nullptr;
  decltype(&llama_batch_free) batch_free = nullptr;
  decltype(&llama_decode) decode = nullptr;
  decltype(&llama_get_logits_ith) logits_ith = nullptr;
  decltype(&llama_adapter_lora_init) adapter_init = nullptr;
  decltype(&llama_adapter_lora_free) adapter_free = nullptr;
  decltype(&llama_set_adapters_lora) set_adapters = nullptr;
  decltype(&llama_model_quantize_default_params) quantize_default_params = nullptr;
  decltype(&llama_model_quantize) quantize = nullptr;
};

// llama.cpp's messages: errors only (a refused file says why there).
inline void llama_cpp_log(ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

#endif

// The library, opened once; nullptr after a WARN when the test is to be skipped. FAILs when node
// is installed but the files were not fetched, or the library does not load.
#if REMAT_HAVE_LLAMA_H
inline const LlamaCpp* llama_cpp() {
#else
inline const void* llama_cpp() {
#endif
#if !(defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__))
  WARN(
      "SKIPPED: the pinned llama.cpp libraries (@node-llama-cpp/linux-x64) are an x86-64 glibc "
      "Linux build, which this machine cannot load");
  return nullptr;
#else
  const std::filesystem::path lib = llama_cpp_bins() / "libllama.v0.4.0.so";
  const bool fetched = std::filesystem::exists(lib) && std::filesystem::exists(llama_cpp_header());
  if (!fetched) {
    if (!have_node()) {
      WARN("SKIPPED: node is not installed, so llama.cpp (" + lib.string() + ", " +
           llama_cpp_header().string() + ") was not fetched");
      return nullptr;
    }
    FAIL("missing " + lib.string() + " or " + llama_cpp_header().string() +
         "; run .ci/fetch-test-data (needs node and npm), then cmake again");
  }
#if !REMAT_HAVE_LLAMA_H
  FAIL(llama_cpp_header().string() +
       " was fetched after this build was configured; run cmake again to build against it");
  return nullptr;
#else
  static std::string error;
  static const LlamaCpp library = [&] {
    LlamaCpp l;
    l.handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!l.handle) {
      error = "cannot load " + lib.string() + ": " + dlerror();
      return l;
    }
    auto symbol = [&](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(l.handle, name));
      if (!f && error.empty()) error = lib.string() + " has no symbol " + name;
    };
    symbol(l.load_backends, "ggml_backend_load_all_from_path");
    symbol(l.log_set, "llama_log_set");
    symbol(l.backend_init, "llama_backend_init");
    symbol(l.model_default_params, "llama_model_default_params");
    symbol(l.context_default_params, "llama_context_default_params");
    symbol(l.model_load, "llama_model_load_from_file");
    symbol(l.model_free, "llama_model_free");
    symbol(l.init_from_model, "llama_init_from_model");
    symbol(l.free, "llama_free");
    symbol(l.batch_init, "llama_batch_init");
    symbol(l.batch_free, "llama_batch_free");
    symbol(l.decode, "llama_decode");
    symbol(l.logits_ith, "llama_get_logits_ith");
    symbol(l.adapter_init, "llama_adapter_lora_init");
    symbol(l.adapter_free, "llama_adapter_lora_free");
    symbol(l.set_adapters, "llama_set_adapters_lora");
    symbol(l.quantize_default_params, "llama_model_quantize_default_params");
    symbol(l.quantize, "llama_model_quantize");
    if (!error.empty()) return l;
    l.log_set(llama_cpp_log, nullptr);
    // ggml's CPU backend is a library of its own, chosen for this processor among the variants.
    l.load_backends(llama_cpp_bins().c_str());
    l.backend_init();
    return l;
  }();
  if (!error.empty()) FAIL(error);
  return &library;
#endif
#endif
}

#if REMAT_HAVE_LLAMA_H

// A model llama.cpp loaded (on the CPU, the only backend of the pinned build), and the logits it
// gives for every position of a token sequence, with LoRA adapters applied at scale 1.
class LlamaCppModel {
 public:
  // `load_mtp`: the file's multi-token-prediction layers are read too (without it llama.cpp
  // requires them by name and shape but reads none of their data).
  LlamaCppModel(const LlamaCpp& l, const std::filesystem::path& path, bool load_mtp = false)
      : l_(l) {
    llama_model_params p = l.model_default_params();
    p.n_gpu_layers = 0;
    p.load_mtp = load_mtp;
    model_ = l.model_load(path.c_str(), p);
  }
  ~LlamaCppModel() {
    if (model_) l_.model_free(model_);  // frees its adapters too
  }
  LlamaCppModel(const LlamaCppModel&) = delete;
  LlamaCppModel& operator=(const LlamaCppModel&) = delete;

  bool loaded() const { return model_ != nullptr; }
  // nullptr when llama.cpp refuses the file (its error is logged).
  llama_adapter_lora* adapter(const std::filesystem::path& path) {
    return l_.adapter_init(model_, path.c_str());
  }
  // logits[t] for each position t of `tokens`, in F32 throughout (F32 KV cache, no flash
  // attention), on a fresh context.
  std::vector<std::vector<float>> logits(const std::vector<uint32_t>& tokens, int vocab,
                                         llama_adapter_lora* adapter = nullptr) {
    llama_context_params c = l_.context_default_params();
    c.n_ctx = 64;
    c.n_batch = c.n_ubatch = 64;
    c.n_seq_max = 1;
    c.n_threads = c.n_threads_batch = 2;
    c.type_k = c.type_v = GGML_TYPE_F32;
    c.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    c.no_perf = true;
    llama_context* ctx = l_.init_from_model(model_, c);
    REQUIRE(ctx != nullptr);
    float scale = 1.0f;
    if (adapter) REQUIRE(l_.set_adapters(ctx, &adapter, 1, &scale) == 0);
    const int n = static_cast<int>(tokens.size());
    llama_batch batch = l_.batch_init(n, 0, 1);
    batch.n_tokens = n;
    for (int i = 0; i < n; ++i) {
      batch.token[i] = static_cast<llama_token>(tokens[std::size_t(i)]);
      batch.pos[i] = i;
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
    const int32_t status = l_.decode(ctx, batch);
    std::vector<std::vector<float>> out;
    for (int i = 0; status == 0 && i < n; ++i) {
      const float* row = l_.logits_ith(ctx, i);
      out.emplace_back(row, row + vocab);
    }
    l_.batch_free(batch);
    l_.free(ctx);
    REQUIRE(status == 0);
    return out;
  }

 private:
  const LlamaCpp& l_;
  llama_model* model_ = nullptr;
};

#endif

}  // namespace remat::test
