// Prints llama.cpp's log-probabilities for a token sequence: the pinned libllama (dlopened from
// build-data, as tests/training/llama_cpp_library.h does) loads a GGUF model on the CPU and
// evaluates the tokens in one batch; each output line holds the log-softmax of the logits at one
// position, every vocabulary entry, printed with 9 significant digits. The Python references
// (tests/training/pytorch_qwen35_reference.py) compare their float64 forward with these lines.
//
//   remat_llama_cpp_logprobs MODEL.gguf TOKEN...
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <llama.h>

namespace fs = std::filesystem;

namespace {

struct Library {
  decltype(&ggml_backend_load_all_from_path) load_backends;
  decltype(&llama_log_set) log_set;
  decltype(&llama_backend_init) backend_init;
  decltype(&llama_model_default_params) model_default_params;
  decltype(&llama_context_default_params) context_default_params;
  decltype(&llama_model_load_from_file) model_load;
  decltype(&llama_model_get_vocab) model_vocab;
  decltype(&llama_vocab_n_tokens) vocab_size;
  decltype(&llama_init_from_model) init_from_model;
  decltype(&llama_batch_init) batch_init;
  decltype(&llama_decode) decode;
  decltype(&llama_get_logits_ith) logits_ith;
};

fs::path bins() {
  return fs::path(REMAT_SOURCE_DIR) /
         "build-data/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64";
}

Library open_library() {
  const fs::path lib = bins() / "libllama.v0.4.0.so";
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw std::runtime_error("cannot load " + lib.string() + " (.ci/fetch-test-data)");
  Library l{};
  auto symbol = [&](auto& f, const char* name) {
    f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, name));
    if (!f) throw std::runtime_error(lib.string() + " has no symbol " + name);
  };
  symbol(l.load_backends, "ggml_backend_load_all_from_path");
  symbol(l.log_set, "llama_log_set");
  symbol(l.backend_init, "llama_backend_init");
  symbol(l.model_default_params, "llama_model_default_params");
  symbol(l.context_default_params, "llama_context_default_params");
  symbol(l.model_load, "llama_model_load_from_file");
  symbol(l.model_vocab, "llama_model_get_vocab");
  symbol(l.vocab_size, "llama_vocab_n_tokens");
  symbol(l.init_from_model, "llama_init_from_model");
  symbol(l.batch_init, "llama_batch_init");
  symbol(l.decode, "llama_decode");
  symbol(l.logits_ith, "llama_get_logits_ith");
  l.log_set(
      [](ggml_log_level level, const char* text, void*) {
        if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
      },
      nullptr);
  l.load_backends(bins().c_str());  // ggml's CPU backend, the variant for this processor
  l.backend_init();
  return l;
}

void print_log_softmax(const float* logits, int vocab) {
  const double top = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int v = 0; v < vocab; ++v) sum += std::exp(double(logits[v]) - top);
  const double log_sum = std::log(sum);
  for (int v = 0; v < vocab; ++v)
    std::printf("%s%.9g", v ? " " : "", double(logits[v]) - top - log_sum);
  std::printf("\n");
}

// F32 throughout (F32 KV cache, no flash attention), one sequence, every position's logits.
void evaluate(const Library& l, const fs::path& path, const std::vector<llama_token>& tokens) {
  llama_model_params mp = l.model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = l.model_load(path.c_str(), mp);
  if (!model) throw std::runtime_error("llama.cpp refused " + path.string());
  const int vocab = l.vocab_size(l.model_vocab(model));
  const int n = int(tokens.size());
  llama_context_params c = l.context_default_params();
  c.n_ctx = c.n_batch = c.n_ubatch = uint32_t(std::max(n, 64));
  c.n_seq_max = 1;
  c.n_threads = c.n_threads_batch = 2;
  c.type_k = c.type_v = GGML_TYPE_F32;
  c.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  c.no_perf = true;
  llama_context* ctx = l.init_from_model(model, c);
  if (!ctx) throw std::runtime_error("llama.cpp made no context for " + path.string());
  llama_batch batch = l.batch_init(n, 0, 1);
  batch.n_tokens = n;
  for (int i = 0; i < n; ++i) {
    batch.token[i] = tokens[std::size_t(i)];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  if (l.decode(ctx, batch) != 0) throw std::runtime_error("llama_decode failed");
  for (int i = 0; i < n; ++i) print_log_softmax(l.logits_ith(ctx, i), vocab);
  // The process ends here: the library's objects go with it.
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf TOKEN...\n", argv[0]);
    return 2;
  }
  try {
    std::vector<llama_token> tokens;
    for (int i = 2; i < argc; ++i) {
      char* end = nullptr;
      const long t = std::strtol(argv[i], &end, 10);
      if (*end != '\0' || t < 0) throw std::invalid_argument(std::string("bad token ") + argv[i]);
      tokens.push_back(llama_token(t));
    }
    evaluate(open_library(), argv[1], tokens);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "remat: error: %s\n", e.what());
    return 2;
  }
}
