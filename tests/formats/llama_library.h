// llama.cpp itself, for the GGUF tokenizer tests to compare remat with:
//   - libllama from the prebuilt llama.cpp that @node-llama-cpp/linux-x64 ships (pinned in
//     .ci/fetch-test-data, fetched into build-data/npm), opened with dlopen; it finds its ggml
//     libraries beside it (its RUNPATH is $ORIGIN). The few C functions used are declared here
//     from the pinned include/llama.h, and the layout of llama_model_params is checked against
//     the defaults llama_model_default_params returns before a model is loaded with it;
// llama.cpp's source at the commit of that build is tests/text/reference_data.h's
// llama_cpp_source(). Without the library a test fails naming the fetch script when npm is
// installed, and is skipped with a warning otherwise, or on a machine that cannot load an x86-64
// glibc library.
#pragma once

#include <dlfcn.h>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/formats/ggml_library.h"
#include "tests/text/reference_data.h"

namespace remat::test {

inline std::filesystem::path llama_library_path() {
  return ggml_library_path().parent_path() / "libllama.v0.4.0.so";
}

struct LlamaLibrary {
  // struct llama_model_params of the pinned llama.h.
  struct ModelParams {
    void* devices;
    const void* tensor_buft_overrides;
    int32_t n_gpu_layers;
    int32_t split_mode;  // enum llama_split_mode
    int32_t load_mode;   // enum llama_load_mode
    int32_t lazy_mode;   // enum llama_lazy_mode
    int32_t main_gpu;
    const float* tensor_split;
    void* progress_callback;
    void* progress_callback_user_data;
    const void* kv_overrides;
    bool vocab_only;
    bool check_tensors;
    bool use_extra_bufts;
    bool no_host;
    bool no_alloc;
    bool load_mtp;
  };
  static_assert(offsetof(ModelParams, vocab_only) == 72 && sizeof(ModelParams) == 80);
  using LogCallback = void (*)(int level, const char* text, void* user_data);
  using LogSet = void (*)(LogCallback callback, void* user_data);
  using DefaultParams = ModelParams (*)();
  using LoadFromFile = void* (*)(const char* path, ModelParams params);
  using ModelFree = void (*)(void* model);
  using GetVocab = const void* (*)(const void* model);
  using Tokenize = int32_t (*)(const void* vocab, const char* text, int32_t text_len,
                               int32_t* tokens, int32_t n_tokens_max, bool add_special,
                               bool parse_special);
  using Detokenize = int32_t (*)(const void* vocab, const int32_t* tokens, int32_t n_tokens,
                                 char* text, int32_t text_len_max, bool remove_special,
                                 bool unparse_special);
  using NTokens = int32_t (*)(const void* vocab);
  using ChatTemplate = const char* (*)(const void* model, const char* name);

  void* handle = nullptr;
  LogSet log_set = nullptr;
  DefaultParams default_params = nullptr;
  LoadFromFile load_from_file = nullptr;
  ModelFree model_free = nullptr;
  GetVocab get_vocab = nullptr;
  Tokenize tokenize = nullptr;
  Detokenize detokenize = nullptr;
  NTokens n_tokens = nullptr;
  ChatTemplate chat_template = nullptr;
};

// Opens the library once, with llama.cpp's log silenced. Returns nullptr after a WARN when the
// test is to be skipped; FAILs when npm is installed but the library was not fetched, or when it
// does not load.
inline const LlamaLibrary* llama_library() {
  if (!ggml_library()) return nullptr;  // the same skip rules, for the same package
  static std::string error;
  static const LlamaLibrary library = [&] {
    LlamaLibrary lib;
    const std::string path = llama_library_path().string();
    lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib.handle) {
      error = "cannot load " + path + ": " + dlerror();
      return lib;
    }
    auto symbol = [&](const char* name) {
      void* s = dlsym(lib.handle, name);
      if (!s && error.empty()) error = path + " has no symbol " + name;
      return s;
    };
    lib.log_set = reinterpret_cast<LlamaLibrary::LogSet>(symbol("llama_log_set"));
    lib.default_params =
        reinterpret_cast<LlamaLibrary::DefaultParams>(symbol("llama_model_default_params"));
    lib.load_from_file =
        reinterpret_cast<LlamaLibrary::LoadFromFile>(symbol("llama_model_load_from_file"));
    lib.model_free = reinterpret_cast<LlamaLibrary::ModelFree>(symbol("llama_model_free"));
    lib.get_vocab = reinterpret_cast<LlamaLibrary::GetVocab>(symbol("llama_model_get_vocab"));
    lib.tokenize = reinterpret_cast<LlamaLibrary::Tokenize>(symbol("llama_tokenize"));
    lib.detokenize = reinterpret_cast<LlamaLibrary::Detokenize>(symbol("llama_detokenize"));
    lib.n_tokens = reinterpret_cast<LlamaLibrary::NTokens>(symbol("llama_vocab_n_tokens"));
    lib.chat_template =
        reinterpret_cast<LlamaLibrary::ChatTemplate>(symbol("llama_model_chat_template"));
    if (error.empty()) lib.log_set([](int, const char*, void*) {}, nullptr);
    return lib;
  }();
  if (!error.empty()) FAIL(error);
  return &library;
}

// A GGUF file's vocabulary loaded by llama.cpp (vocab_only), freed with the object.
class LlamaVocabModel {
 public:
  LlamaVocabModel(const LlamaLibrary& lib, const std::filesystem::path& gguf) : lib_(lib) {
    LlamaLibrary::ModelParams params = lib.default_params();
    // llama.cpp's defaults, field by field: the declared layout is the library's.
    REQUIRE(params.devices == nullptr);
    REQUIRE(params.n_gpu_layers == -1);
    REQUIRE(params.split_mode == 1);
    REQUIRE(params.load_mode == -1);
    REQUIRE(params.lazy_mode == 1);
    REQUIRE(params.main_gpu == 0);
    REQUIRE(params.kv_overrides == nullptr);
    REQUIRE((!params.vocab_only && !params.check_tensors && params.use_extra_bufts &&
             !params.no_host && !params.no_alloc && !params.load_mtp));
    params.vocab_only = true;
    model_ = lib.load_from_file(gguf.c_str(), params);
    INFO("llama.cpp loads " << gguf);
    REQUIRE(model_ != nullptr);
    vocab_ = lib.get_vocab(model_);
  }
  ~LlamaVocabModel() { lib_.model_free(model_); }
  LlamaVocabModel(const LlamaVocabModel&) = delete;
  LlamaVocabModel& operator=(const LlamaVocabModel&) = delete;

  // llama_tokenize: add_special adds what the vocabulary's add_bos/add_eos say; parse_special
  // matches control tokens in the text.
  std::vector<uint32_t> tokenize(const std::string& text, bool add_special,
                                 bool parse_special) const {
    std::vector<int32_t> ids(text.size() + 8);
    int32_t n = lib_.tokenize(vocab_, text.data(), int32_t(text.size()), ids.data(),
                              int32_t(ids.size()), add_special, parse_special);
    REQUIRE(n >= 0);
    return std::vector<uint32_t>(ids.begin(), ids.begin() + n);
  }
  // llama_detokenize with remove_special off and unparse_special on: every token's text.
  std::string detokenize(const std::vector<uint32_t>& ids) const {
    const std::vector<int32_t> tokens(ids.begin(), ids.end());
    std::string text(ids.size() * 8 + 16, '\0');
    int32_t n = lib_.detokenize(vocab_, tokens.data(), int32_t(tokens.size()), text.data(),
                                int32_t(text.size()), false, true);
    if (n < 0) {
      text.resize(std::size_t(-n));
      n = lib_.detokenize(vocab_, tokens.data(), int32_t(tokens.size()), text.data(),
                          int32_t(text.size()), false, true);
    }
    REQUIRE(n >= 0);
    text.resize(std::size_t(n));
    return text;
  }
  std::size_t n_tokens() const { return std::size_t(lib_.n_tokens(vocab_)); }
  // tokenizer.chat_template as llama.cpp reads it; "" when absent.
  std::string chat_template() const {
    const char* t = lib_.chat_template(model_, nullptr);
    return t ? t : "";
  }

 private:
  const LlamaLibrary& lib_;
  void* model_ = nullptr;
  const void* vocab_ = nullptr;
};

}  // namespace remat::test
