// llama.cpp's own training loop and forward pass, timed on a GGUF model, as the peer remat's
// step is compared with (samples/bench/peers.sh, docs/benchmarks.md). It opens the prebuilt
// libllama that node-llama-cpp ships (CPU, or Vulkan) with dlopen, typed by the llama.h and
// ggml-opt.h of the source it was built from; nothing of remat links to it.
//
//   remat_llama_cpp_peer LIBLLAMA.so MODEL.gguf [--gpu] [--steps N] [--warmup W] [--threads N]
//                        [--save TRAINED.gguf]
//
// Training runs as llama.cpp's examples/training/finetune does: llama_opt_init over all
// parameters, AdamW (constant lr 1e-4, betas 0.9/0.999, eps 1e-8, no weight decay), then
// llama_opt_epoch over datapoints of n_ctx_train tokens (one sequence, one optimizer step each;
// seeded random tokens); --save writes the trained model, to see which tensors
// llama.cpp's training changed. The forward is llama_decode of one such sequence, logits for its last
// token only (prompt processing). Prints one JSON line with the median times.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <ggml-opt.h>
#include <llama.h>

namespace {

using Clock = std::chrono::steady_clock;

// The functions used, looked up once in the opened libraries (libllama loads libggml-base, whose
// ggml_opt_* functions resolve through the global scope).
struct Api {
  decltype(&ggml_backend_load_all_from_path) load_backends;
  decltype(&llama_log_set) log_set;
  decltype(&llama_backend_init) backend_init;
  decltype(&llama_model_default_params) model_default_params;
  decltype(&llama_context_default_params) context_default_params;
  decltype(&llama_model_load_from_file) model_load;
  decltype(&llama_model_free) model_free;
  decltype(&llama_init_from_model) init_from_model;
  decltype(&llama_free) free;
  decltype(&llama_model_n_ctx_train) n_ctx_train;
  decltype(&llama_n_ctx) n_ctx;
  decltype(&llama_model_get_vocab) model_vocab;
  decltype(&llama_vocab_n_tokens) n_vocab;
  decltype(&llama_opt_param_filter_all) filter_all;
  decltype(&llama_opt_init) opt_init;
  decltype(&llama_opt_epoch) opt_epoch;
  decltype(&llama_get_memory) get_memory;
  decltype(&llama_memory_clear) memory_clear;
  decltype(&llama_batch_init) batch_init;
  decltype(&llama_batch_free) batch_free;
  decltype(&llama_decode) decode;
  decltype(&llama_synchronize) synchronize;
  decltype(&llama_model_save_to_file) save;
  decltype(&ggml_opt_dataset_init) dataset_init;
  decltype(&ggml_opt_dataset_free) dataset_free;
  decltype(&ggml_opt_dataset_data) dataset_data;
  decltype(&ggml_opt_dataset_labels) dataset_labels;
  decltype(&ggml_opt_result_init) result_init;
  decltype(&ggml_opt_result_free) result_free;
  decltype(&ggml_opt_result_loss) result_loss;
  decltype(&ggml_opt_result_reset) result_reset;
};

template <typename F>
void bind(void* handle, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(handle, name));
  if (!f) throw std::runtime_error(std::string("libllama has no ") + name);
}

Api open_api(const std::string& lib) {
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!h) throw std::runtime_error("cannot open " + lib + ": " + dlerror());
  Api a{};
  bind(h, a.load_backends, "ggml_backend_load_all_from_path");
  bind(h, a.log_set, "llama_log_set");
  bind(h, a.backend_init, "llama_backend_init");
  bind(h, a.model_default_params, "llama_model_default_params");
  bind(h, a.context_default_params, "llama_context_default_params");
  bind(h, a.model_load, "llama_model_load_from_file");
  bind(h, a.model_free, "llama_model_free");
  bind(h, a.init_from_model, "llama_init_from_model");
  bind(h, a.free, "llama_free");
  bind(h, a.n_ctx_train, "llama_model_n_ctx_train");
  bind(h, a.n_ctx, "llama_n_ctx");
  bind(h, a.model_vocab, "llama_model_get_vocab");
  bind(h, a.n_vocab, "llama_vocab_n_tokens");
  bind(h, a.filter_all, "llama_opt_param_filter_all");
  bind(h, a.opt_init, "llama_opt_init");
  bind(h, a.opt_epoch, "llama_opt_epoch");
  bind(h, a.get_memory, "llama_get_memory");
  bind(h, a.memory_clear, "llama_memory_clear");
  bind(h, a.batch_init, "llama_batch_init");
  bind(h, a.batch_free, "llama_batch_free");
  bind(h, a.decode, "llama_decode");
  bind(h, a.synchronize, "llama_synchronize");
  bind(h, a.save, "llama_model_save_to_file");
  bind(RTLD_DEFAULT, a.dataset_init, "ggml_opt_dataset_init");
  bind(RTLD_DEFAULT, a.dataset_free, "ggml_opt_dataset_free");
  bind(RTLD_DEFAULT, a.dataset_data, "ggml_opt_dataset_data");
  bind(RTLD_DEFAULT, a.dataset_labels, "ggml_opt_dataset_labels");
  bind(RTLD_DEFAULT, a.result_init, "ggml_opt_result_init");
  bind(RTLD_DEFAULT, a.result_free, "ggml_opt_result_free");
  bind(RTLD_DEFAULT, a.result_loss, "ggml_opt_result_loss");
  bind(RTLD_DEFAULT, a.result_reset, "ggml_opt_result_reset");
  return a;
}

struct Options {
  std::string lib, model, save;
  bool gpu = false;
  int steps = 5, warmup = 2, threads = 2;
};

Options parse(int argc, char** argv) {
  if (argc < 3)
    throw std::invalid_argument(
        "usage: remat_llama_cpp_peer LIBLLAMA.so MODEL.gguf [--gpu] [--steps N] [--warmup W] "
        "[--threads N] [--save TRAINED.gguf]");
  Options o;
  o.lib = argv[1];
  o.model = argv[2];
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&] {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return std::atoi(argv[++i]);
    };
    if (a == "--gpu")
      o.gpu = true;
    else if (a == "--steps")
      o.steps = value();
    else if (a == "--warmup")
      o.warmup = value();
    else if (a == "--threads")
      o.threads = value();
    else if (a == "--save" && i + 1 < argc)
      o.save = argv[++i];
    else
      throw std::invalid_argument("unknown option " + a);
  }
  if (o.steps < 1 || o.warmup < 0 || o.threads < 1)
    throw std::invalid_argument("--steps and --threads must be at least 1");
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Each optimizer step's end time: ggml_opt_epoch calls back after every batch.
std::vector<Clock::time_point>* g_step_ends = nullptr;
void on_batch(bool train, ggml_opt_context_t, ggml_opt_dataset_t, ggml_opt_result_t, int64_t,
              int64_t, int64_t) {
  if (train && g_step_ends) g_step_ends->push_back(Clock::now());
}

ggml_opt_optimizer_params adamw(void*) {
  ggml_opt_optimizer_params p{};
  p.adamw = {1e-4f, 0.9f, 0.999f, 1e-8f, 0.0f};
  return p;
}

void quiet(ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

std::vector<llama_token> random_tokens(std::size_t n, int vocab) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> pick(0, vocab - 1);
  std::vector<llama_token> t(n);
  for (auto& x : t) x = pick(rng);
  return t;
}

// Median step ms of the steps after the warm-up, and the mean loss of the last epoch.
void train(const Api& a, llama_context* ctx, llama_model* model, const Options& o, int n_ctx,
           int vocab, double* step_ms, double* loss) {
  const int64_t ndata = o.warmup + o.steps;
  ggml_opt_dataset_t data = a.dataset_init(GGML_TYPE_I32, GGML_TYPE_I32, n_ctx, n_ctx, ndata, 1);
  const std::vector<llama_token> tokens = random_tokens(std::size_t(ndata) * n_ctx + 1, vocab);
  auto* in = static_cast<llama_token*>(a.dataset_data(data)->data);
  auto* labels = static_cast<llama_token*>(a.dataset_labels(data)->data);
  for (int64_t i = 0; i < ndata; ++i) {
    std::memcpy(in + i * n_ctx, tokens.data() + i * n_ctx, n_ctx * sizeof(llama_token));
    std::memcpy(labels + i * n_ctx, tokens.data() + i * n_ctx + 1, n_ctx * sizeof(llama_token));
  }
  llama_opt_params op{};
  op.n_ctx_train = 0;
  op.param_filter = a.filter_all;
  op.get_opt_pars = adamw;
  op.optimizer_type = GGML_OPT_OPTIMIZER_TYPE_ADAMW;
  a.opt_init(ctx, model, op);
  ggml_opt_result_t result = a.result_init();
  std::vector<Clock::time_point> ends;
  g_step_ends = &ends;
  const Clock::time_point start = Clock::now();
  a.opt_epoch(ctx, data, result, nullptr, ndata, on_batch, nullptr);
  g_step_ends = nullptr;
  std::vector<double> ms;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const Clock::time_point from = i == 0 ? start : ends[i - 1];
    if (int(i) >= o.warmup)
      ms.push_back(std::chrono::duration<double, std::milli>(ends[i] - from).count());
  }
  if (ms.empty()) throw std::runtime_error("llama_opt_epoch ran no step");
  *step_ms = median(ms);
  double unc = 0;
  a.result_loss(result, loss, &unc);
  a.result_free(result);
  a.dataset_free(data);
}

// Median ms of decoding one n_ctx-token sequence from an empty cache.
double forward(const Api& a, llama_context* ctx, const Options& o, int n_ctx, int vocab) {
  const std::vector<llama_token> tokens = random_tokens(n_ctx, vocab);
  llama_batch b = a.batch_init(n_ctx, 0, 1);
  std::vector<double> ms;
  for (int r = 0; r < o.warmup + o.steps; ++r) {
    b.n_tokens = n_ctx;
    for (int t = 0; t < n_ctx; ++t) {
      b.token[t] = tokens[t];
      b.pos[t] = t;
      b.n_seq_id[t] = 1;
      b.seq_id[t][0] = 0;
      b.logits[t] = t == n_ctx - 1;
    }
    a.memory_clear(a.get_memory(ctx), true);
    const Clock::time_point t0 = Clock::now();
    if (a.decode(ctx, b) != 0) throw std::runtime_error("llama_decode failed");
    a.synchronize(ctx);
    if (r >= o.warmup)
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  a.batch_free(b);
  return median(ms);
}

llama_context* new_context(const Api& a, llama_model* model, const Options& o, int n_ctx,
                           bool training) {
  llama_context_params cp = a.context_default_params();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = uint32_t(n_ctx);
  cp.n_threads = cp.n_threads_batch = o.threads;
  if (training) {
    // As finetune.cpp: an f32 cache and no flash attention (no backward for either).
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  }
  llama_context* ctx = a.init_from_model(model, cp);
  if (!ctx) throw std::runtime_error("llama_init_from_model failed");
  // llama.cpp pads a context to a multiple of 256 tokens; its training rows are the model's
  // context_length, so the two must agree.
  if (int(a.n_ctx(ctx)) != n_ctx)
    throw std::invalid_argument("the model's context_length " + std::to_string(n_ctx) +
                                " is not a multiple of 256 (llama.cpp's context is " +
                                std::to_string(a.n_ctx(ctx)) + " tokens)");
  return ctx;
}

int run(const Options& o) {
  const Api a = open_api(o.lib);
  a.log_set(quiet, nullptr);
  const std::string dir = o.lib.substr(0, o.lib.find_last_of('/'));
  a.load_backends(dir.c_str());
  a.backend_init();
  llama_model_params mp = a.model_default_params();
  mp.n_gpu_layers = o.gpu ? 999 : 0;
  mp.load_mode = LLAMA_LOAD_MODE_NONE;  // writable weights, as finetune.cpp forces
  llama_model* model = a.model_load(o.model.c_str(), mp);
  if (!model) throw std::runtime_error("llama.cpp could not load " + o.model);
  const int n_ctx = a.n_ctx_train(model);
  const int vocab = a.n_vocab(a.model_vocab(model));
  double fwd_ms = 0, step_ms = 0, loss = 0;
  {
    llama_context* ctx = new_context(a, model, o, n_ctx, false);
    fwd_ms = forward(a, ctx, o, n_ctx, vocab);
    a.free(ctx);
  }
  {
    llama_context* ctx = new_context(a, model, o, n_ctx, true);
    // llama_decode hands the CPU backend its thread count, which the training loop (straight
    // to ggml_opt_eval) never does: without this it runs ggml's default of 4 threads.
    Options once = o;
    once.warmup = 0;
    once.steps = 1;
    forward(a, ctx, once, n_ctx, vocab);
    train(a, ctx, model, o, n_ctx, vocab, &step_ms, &loss);
    a.free(ctx);
  }
  if (!o.save.empty()) a.save(model, o.save.c_str());
  a.model_free(model);
  std::printf(
      "{\"peer\": \"llama.cpp\", \"backend\": \"%s\", \"threads\": %d, \"tokens_per_step\": %d, "
      "\"step_ms\": %.2f, \"train_tokens_per_s\": %.1f, \"forward_ms\": %.2f, "
      "\"forward_tokens_per_s\": %.1f, \"loss\": %.4f}\n",
      o.gpu ? "vulkan" : "cpu", o.threads, n_ctx, step_ms, n_ctx / step_ms * 1e3, fwd_ms,
      n_ctx / fwd_ms * 1e3, loss);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "remat: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "remat: error: %s\n", e.what());
    return 1;
  }
}
