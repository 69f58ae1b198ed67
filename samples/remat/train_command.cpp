// `remat train`: trains a GPT on a byte-level text file under an arena cap, on the default Vulkan
// device, with progress, loss, throughput, and the memory actually allocated.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/ignore_target.h"
#include "base/json_writer.h"
#include "base/lr_schedule.h"
#include "cli_args.h"
#include "commands.h"
#include "formats/gpt2_weights.h"
#include "formats/hf_folder.h"
#include "formats/peft_adapter.h"
#include "formats/safetensors.h"
#include "formats/token_dataset.h"
#include "formats/weight_files.h"
#include "memory_text.h"
#include "model_args.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "runtime/training_state.h"
#include "runtime/vulkan/device.h"
#include "stop_signal.h"
#include "train_data.h"
#include "train_lora.h"
#include "train_resume.h"

namespace remat::cli {
namespace {

CommandSpec spec() {
  CommandSpec c{
      "train",
      "[MODEL]",
      1,
      "Trains on FILE read as bytes (vocabulary 256), or as tokens: its text encoded with the\n"
      "byte-level BPE tokenizer at --tokenizer PATH (see remat tokenize), an llm.c token file\n"
      "(recognised by its header), or nanoGPT's raw uint16 ids (--data-format u16). Every token\n"
      "must be below the model's vocabulary, checked before any step. Step s, row b is the\n"
      "window of T+1 tokens starting at ((s*B + b)*T) mod (n - T - 1); with --accum N,\n"
      "micro-batch m of step s reads as step s*N + m. --arena caps activation memory and the\n"
      "planner picks what to recompute; --policy fixes the policy instead. --val-data FILE is\n"
      "read the same way and its first --val-batches batches (windowed as above, fewer if the\n"
      "file holds fewer distinct windows) are evaluated without training, dropout off: before\n"
      "the first step, every --val-every steps and after the last.\n"
      "A .jsonl FILE (or --data-format jsonl) holds fine-tuning examples, one JSON object per\n"
      "line: {\"text\"}, {\"prompt\", \"completion\"} or {\"messages\"} (remat tokenize --jsonl\n"
      "shows their tokens and loss masks). Each is one row, cut to T+1 tokens and padded, with\n"
      "only its trained tokens as targets; row k = (s*N + m)*B + b is example k mod n, or with\n"
      "--shuffle SEED the (k mod n)-th of epoch k div n's permutation of them.\n"
      "--save-state DIR keeps everything needed to continue (weights, AdamW moments, step, the\n"
      "run's settings and data hash; docs/training-state.md) and --resume DIR continues it, bit\n"
      "for bit as if never stopped; SIGINT or SIGTERM stops at the next step, saving the state.\n",
      {{"--data", "FILE", "training text or tokens (required)", ""},
       {"--tokenizer", "PATH", "encode --data with this byte-level BPE tokenizer", ""},
       {"--data-format", "F", "auto, bytes, text or jsonl (with --tokenizer), llmc or u16", "auto"},
       {"--chat-template", "FILE", "render JSONL conversations with this Jinja template",
        "the tokenizer folder's"},
       {"--shuffle", "SEED", "read JSONL examples in a per-epoch permutation of this seed", ""},
       {"--val-data", "FILE", "held-out text or tokens for the validation loss", ""},
       {"--val-every", "K", "evaluate --val-data every K steps (and after the last)", ""},
       {"--val-batches", "N", "evaluate at most N batches of --val-data", "8"},
       {"--init", "PATH",
        "start from these weights: a Hugging Face model folder (gpt2, llama, qwen2), which sets "
        "the model, or a .safetensors file (GPT-2 sets the model; Llama-family needs --model)",
        ""}}};
  for (FlagSpec& f : model_flags()) c.flags.push_back(std::move(f));
  const std::vector<FlagSpec> training = {
      {"--steps", "N", "optimizer steps", "100"},
      {"--accum", "N", "micro-batches per optimizer step (gradient accumulation)", "1"},
      {"--lr", "RATE", "AdamW learning rate (the peak of --lr-schedule)", "3e-4"},
      {"--lr-schedule", "S", "constant, or linear or cosine decay towards 0 at --steps",
       "constant"},
      {"--warmup-steps", "W", "rise linearly from 0 to --lr over the first W steps", "0"},
      {"--min-lr-ratio", "R", "cosine ends at R × --lr, R in [0, 1]", "0"},
      {"--wd", "W", "AdamW decoupled weight decay, on 2-D parameters only", "0"},
      {"--beta1", "B1", "AdamW first-moment decay", "0.9"},
      {"--beta2", "B2", "AdamW second-moment decay", "0.999"},
      {"--eps", "EPS", "AdamW denominator epsilon", "1e-8"},
      {"--grad-clip", "NORM", "clip the global gradient norm to NORM; 0 disables", "0"},
      {"--seed", "S", "weight initialisation and dropout masks", "0"},
      {"--save", "PATH",
       "write the trained weights (atomically) to PATH.safetensors, or else into the folder PATH "
       "as a Hugging Face model (config.json, model.safetensors)",
       ""},
      {"--save-every", "K",
       "also save every K steps (with --save, --save-state and --save-adapter)", ""},
      {"--save-state", "DIR", "write the training state here (atomically) at the end and on stop",
       ""},
      {"--resume", "DIR", "continue the run saved in DIR; --steps may be raised", ""},
      {"--stop-at", "S", "stop after step S of --steps and save the state, as on a signal", ""},
      {"--log-json", "FILE", "one JSON object per step, then a summary", ""},
      {"--sample", "N", "after training, continue the data's first tokens by N tokens", "0"},
      {"--quiet", "", "no progress output", ""},
  };
  c.flags.insert(c.flags.end(), training.begin(), training.end());
  for (FlagSpec& f : train_lora_flags()) c.flags.push_back(std::move(f));
  return c;
}

struct Options {
  ModelSelection sel;
  std::filesystem::path data;
  std::optional<std::filesystem::path> val_data;
  int val_every = 0;  // 0: only before the first and after the last step
  int val_batches = 8;
  std::optional<std::string> tokenizer;
  std::string data_format = "auto";
  JsonlOptions jsonl;
  std::optional<std::filesystem::path> init, save, log_json, save_state;
  std::optional<Resumed> resumed;
  int steps = 100;
  std::optional<int> stop_at;  // --stop-at: the step after which a longer run stops
  int accum = 1;
  int save_every = 0;
  int sample = 0;
  OptimizerConfig opt;
  LrSchedule schedule;
  uint64_t seed = 0;
  bool quiet = false;
  TrainLora lora;  // --lora and its files
};

// --save: a file (or with `folder`, a folder) in an existing, writable folder.
// Checked before anything runs, so a typo fails at once instead of after training.
void check_output_file(const std::filesystem::path& path, const std::string& flag,
                       bool folder = false) {
  if (!folder) return check_output_path(path.string(), flag);
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec))
    throw UsageError(path.string() + ": is a file; " + flag +
                     " takes a path ending in .safetensors or a folder for a Hugging Face model");
  check_output_folder(path.string(), flag);
}

// --lr-schedule and its flags over the run's --steps, peaking at --lr; the library's messages
// name its fields, so the flags are checked here to name the flags instead.
LrSchedule parse_schedule(const Args& a, double lr, int steps) {
  LrSchedule s;
  try {
    s.decay = parse_lr_decay(a.get_or_default("--lr-schedule"));
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--lr-schedule: ") + e.what());
  }
  s.base_lr = lr;
  s.total_steps = steps;
  s.warmup_steps = a.get_int_or_default("--warmup-steps", 0, 100000000);
  if (s.warmup_steps > steps)
    throw UsageError("--warmup-steps " + std::to_string(s.warmup_steps) + " is more than --steps " +
                     std::to_string(steps));
  s.min_lr_ratio = a.get_double_or_default("--min-lr-ratio");
  if (!(s.min_lr_ratio >= 0 && s.min_lr_ratio <= 1))
    throw UsageError("--min-lr-ratio must be in [0, 1]");
  if (a.has("--min-lr-ratio") && s.decay != LrDecay::cosine)
    throw UsageError("--min-lr-ratio needs --lr-schedule cosine");
  validate(s);
  return s;
}

Options parse(const std::vector<std::string>& user_argv) {
  Options o;
  std::vector<std::string> argv = user_argv;
  std::optional<ModelConfig> base;
  bool model_named = false;
  if (const Args given(user_argv, spec()); auto dir = given.get("--resume")) {
    o.resumed = read_resumed(*dir);
    argv = arguments_of_state(given, argv, o.resumed->state);
    model_named = given.has("--model") || !given.positionals().empty();
  }
  Args a(argv, spec());
  // A named model (a Llama-family one needs it: its shape is not in the weights) is loaded from
  // --init by name; otherwise the GPT-2 shape is read from the checkpoint.
  const bool named = a.has("--model") || !a.positionals().empty();
  if (auto w = a.get("--init")) o.init = *w;
  if (o.init && !named && !o.resumed) {
    std::optional<int> heads;
    if (auto h = a.get_int("--heads", 1, 1 << 20)) heads = static_cast<int>(*h);
    base = checkpoint_model(*o.init, heads);
  }
  // Resumed, the model is the state's; one named on the command line is compared with it.
  if (o.resumed) base = model_named ? std::nullopt : std::optional(o.resumed->state.model);
  o.sel = parse_model_selection(a, base);
  if (const std::string why = o.sel.model.training_refusal(); !why.empty()) throw UsageError(why);
  if (o.init) WeightFiles::open(*o.init);  // the weights' headers, before anything runs
  auto data = a.get("--data");
  if (!data) throw UsageError("--data FILE is required (any file; it is read as bytes)");
  o.data = *data;
  o.tokenizer = a.get("--tokenizer");
  if (auto v = a.get("--val-data")) o.val_data = *v;
  o.val_every = static_cast<int>(a.get_int("--val-every", 1, 100000000).value_or(0));
  o.val_batches = static_cast<int>(a.get_int_or_default("--val-batches", 1, 1000000));
  if (!o.val_data && (a.has("--val-every") || a.has("--val-batches")))
    throw UsageError("--val-every and --val-batches need --val-data FILE");
  o.data_format = a.get_or_default("--data-format");
  if (auto t = a.get("--chat-template")) o.jsonl.chat_template = *t;
  if (auto seed = a.get_int("--shuffle", 0, INT64_MAX)) o.jsonl.shuffle = uint64_t(*seed);
  o.steps = static_cast<int>(a.get_int_or_default("--steps", 1, 100000000));
  o.accum = static_cast<int>(a.get_int_or_default("--accum", 1, 4096));
  o.sample = static_cast<int>(a.get_int_or_default("--sample", 0, 100000));
  o.save_every = static_cast<int>(a.get_int("--save-every", 1, 100000000).value_or(0));
  // The CLI's declared defaults, not the library's (PyTorch's lr 1e-3, weight decay 0.01).
  o.opt.lr = a.get_double_or_default("--lr");
  o.opt.weight_decay = a.get_double_or_default("--wd");
  o.opt.beta1 = a.get_double_or_default("--beta1");
  o.opt.beta2 = a.get_double_or_default("--beta2");
  o.opt.eps = a.get_double_or_default("--eps");
  o.opt.grad_clip = static_cast<float>(a.get_double_or_default("--grad-clip"));
  if (o.opt.lr <= 0) throw UsageError("--lr must be positive");
  if (o.opt.weight_decay < 0) throw UsageError("--wd must be at least 0");
  if (o.opt.beta1 < 0 || o.opt.beta1 >= 1 || o.opt.beta2 < 0 || o.opt.beta2 >= 1)
    throw UsageError("--beta1 and --beta2 must be in [0, 1)");
  if (o.opt.eps <= 0) throw UsageError("--eps must be positive");
  if (o.opt.grad_clip < 0) throw UsageError("--grad-clip must be at least 0 (0 disables clipping)");
  o.schedule = parse_schedule(a, o.opt.lr, o.steps);
  o.seed = static_cast<uint64_t>(a.get_int_or_default("--seed", 0, INT64_MAX));
  if (auto v = a.get("--save")) {
    o.save = *v;
    check_output_file(*o.save, "--save", !names_safetensors_file(*o.save));
  }
  if (auto v = a.get("--log-json")) {
    o.log_json = *v;
    check_output_path(o.log_json->string(), "--log-json");
  }
  o.lora = parse_train_lora(a, o.init, o.sel.model.arch);
  choose_auto_loss_chunk(o.sel, o.lora.spec);
  if (o.sample > 0 && o.sel.shape.loss_chunk != 0)
    throw UsageError("--sample reads a row's whole logits; it needs --loss-chunk 0");
  if (o.lora.spec.enabled() && o.save)
    throw UsageError(
        "--save writes the model's weights, which LoRA leaves frozen; use "
        "--save-adapter DIR or --merge-out OUT.safetensors");
  if (auto v = a.get("--save-state")) {
    o.save_state = *v;
    std::error_code ec;
    if (std::filesystem::exists(*o.save_state, ec) &&
        !std::filesystem::is_directory(*o.save_state, ec))
      throw UsageError(v->c_str() + std::string(": is a file; --save-state needs a folder"));
    std::filesystem::path dir = o.save_state->lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();
    const std::filesystem::path parent = dir.has_parent_path() ? dir.parent_path() : ".";
    if (!std::filesystem::is_directory(parent, ec) || ::access(parent.c_str(), W_OK) != 0)
      throw UsageError(parent.string() +
                       ": no such writable folder for --save-state; create it first");
  }
  if (auto v = a.get_int("--stop-at", 1, 100000000)) {
    o.stop_at = static_cast<int>(*v);
    if (!o.save_state) throw UsageError("--stop-at needs --save-state DIR to continue from");
    if (*o.stop_at >= o.steps)
      throw UsageError("--stop-at " + std::to_string(*o.stop_at) + " must be below --steps " +
                       std::to_string(o.steps));
  }
  if (o.resumed) o.sel.model_name = std::string(o.sel.model.name());
  if (o.save_every && !o.save && !o.save_state && !o.lora.save_adapter)
    throw UsageError("--save-every needs --save PATH, --save-state DIR or --save-adapter DIR");
  o.quiet = a.has("--quiet");
  return o;
}

// Per-step JSON lines go to a temporary file renamed into place at the end, so an interrupted
// run never leaves a half-written log under the requested name.
// --log-json: one JSON object per line, written to a temporary file that replaces the log only
// when the run ends normally; a failed run leaves any previous log untouched.
class JsonLog {
 public:
  explicit JsonLog(const std::optional<std::filesystem::path>& path) {
    if (path) file_.emplace(*path);
  }
  void line(const JsonWriter& json) {
    if (!file_) return;
    const std::string text = json.str() + "\n";
    file_->write(text.data(), text.size());
  }
  void commit() {
    if (file_) file_->commit();
  }

 private:
  std::optional<AtomicFile> file_;
};

// Resident set size of this process (Linux /proc), for the soak figures; 0 where unavailable.
uint64_t host_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string join(const std::vector<std::string>& v) {
  std::string o;
  for (const auto& s : v) o += (o.empty() ? "" : ",") + s;
  return o.empty() ? "-" : o;
}

// Continues the first tokens of the data for --sample N tokens and prints prompt|continuation
// (decoded when there is a tokenizer), with bytes that are not printable ASCII escaped.
void print_sample(Session& session, const TrainingData& training, const Options& o) {
  const std::vector<uint32_t> prompt = training.data.first_tokens(16);
  const auto out = session.sample(prompt, o.sample, o.seed);
  auto show = [&](const std::vector<uint32_t>& ids) {
    std::vector<uint32_t> v = ids;
    if (training.tokenizer) {
      const std::string text = training.tokenizer->decode(ids);
      v.assign(text.begin(), text.end());
      for (uint32_t& b : v) b &= 0xFF;
    }
    std::string s;
    for (uint32_t t : v) {
      if (t == '\n')
        s += "\\n";
      else if (t >= 32 && t < 127)
        s += static_cast<char>(t);
      else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", t);
        s += buf;
      }
    }
    return s;
  };
  std::printf("sample   %s|%s\n", show(prompt).c_str(), show(out).c_str());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct ValidationLoss {
  double loss = 0;  // the mean over the trained targets of the evaluated batches
  double ms = 0;    // wall time of the evaluation, not counted in ms/step
};

ValidationLoss validation_loss(Session& session, const ValidationData& val) {
  const auto t0 = std::chrono::steady_clock::now();
  double sum = 0, targets = 0;
  for (int k = 0; k < val.batches; ++k) {
    const Batch b = val.data.batch(static_cast<uint64_t>(k), session.config().shape.batch);
    // Each batch's loss is its trained targets' mean: weighted by their count, every target of
    // every batch counts once.
    const double trained = double(b.targets.size()) -
                           double(std::count(b.targets.begin(), b.targets.end(), kIgnoreTarget));
    sum += session.evaluate(b.tokens, b.targets) * trained;
    targets += trained;
  }
  const auto t1 = std::chrono::steady_clock::now();
  return {sum / targets, std::chrono::duration<double, std::milli>(t1 - t0).count()};
}

void print_validation(const ValidationLoss& v, int step, int steps, bool tty) {
  // On a terminal the line replaces the progress bar, which continues below it.
  std::printf("%sval      step %d/%d  loss %.4f  (%.0f ms)%s\n", tty ? "\r" : "", step, steps,
              v.loss, v.ms, tty ? std::string(40, ' ').c_str() : "");
  std::fflush(stdout);
}

}  // namespace

int run_train(const std::vector<std::string>& argv) {
  if (print_help_if_requested(argv, spec())) return 0;
  const Options o = parse(argv);
  const TrainingData training = load_training_data(o.data, o.data_format, o.tokenizer,
                                                   o.sel.shape.seq, o.sel.model.vocab, o.jsonl);
  const TrainingRows& data = training.data;
  std::optional<ValidationData> val;
  if (o.val_data)
    val = load_validation_data(*o.val_data, o.data_format, training, o.sel.shape.batch,
                               o.sel.shape.seq, o.sel.model.vocab, o.val_batches);
  // From here on a signal stops the run at the next step boundary (before the first step, when
  // it comes while kernels compile or weights load), so the state it saves is complete.
  const StopSignals signals;
  auto device = Device::open();

  SessionConfig cfg;
  cfg.model = o.sel.model;
  cfg.lora = o.lora.spec;
  cfg.shape = o.sel.shape;
  cfg.policy = o.sel.policy;
  cfg.arena_budget = o.sel.arena;
  cfg.memory_budget = o.sel.memory;
  cfg.choose_loss_chunk = o.sel.choose_loss_chunk && o.sample == 0;  // sampling: whole logits
  cfg.optimizer = o.opt;
  cfg.schedule = o.schedule;
  cfg.accum = o.accum;
  cfg.seed = o.seed;
  cfg.costs = o.sel.costs ? &*o.sel.costs : nullptr;
  // The run's files are hashed only when a state records them or is checked against them.
  RunRecord run;
  if (o.save_state || o.resumed)
    run = training_run_record(o.data, o.tokenizer, o.init, o.data_format, o.jsonl,
                              o.resumed ? &*o.resumed : nullptr);
  if (o.save_state || o.resumed) {
    record_lora(run, o.lora.spec, o.sel.model.arch, o.sel.shape.weight_dtype);
    record_memory(run, o.sel.memory);
  }
  if (o.resumed) require_same_run(*o.resumed, cfg, o.steps, run);
  Session session(*device, cfg);
  if (o.init) session.load(*o.init);
  const auto load_start = std::chrono::steady_clock::now();
  if (o.resumed) load_training_state(session, o.resumed->dir);
  const double load_s = seconds_since(load_start);
  if (!o.resumed) load_lora_init(session, o.lora);
  const int start = static_cast<int>(session.steps_done());
  const bool tty = isatty(STDOUT_FILENO) && !o.quiet;
  auto save_state = [&] {
    if (!o.save_state) return;
    const auto t0 = std::chrono::steady_clock::now();
    save_training_state(session, *o.save_state, run);
    if (!o.quiet)
      std::printf("%sstate    step %u saved in %s (%.2f s)\n", tty ? "\r" : "",
                  session.steps_done(), o.save_state->string().c_str(), seconds_since(t0));
  };

  const Plan& plan = session.plan();
  const ModelConfig& m = cfg.model;
  std::printf("device   %s\n", device->summary().c_str());
  std::printf("model    %s: %s, %.2fM parameters; batch %d × seq %d%s; activations %s\n",
              o.sel.model_name.c_str(), model_shape_text(m).c_str(),
              double(m.parameter_count()) / 1e6, cfg.shape.batch, cfg.shape.seq,
              o.accum > 1 ? (" × " + std::to_string(o.accum) + " micro-batches").c_str() : "",
              std::string(dtype_name(cfg.shape.activation_dtype)).c_str());
  print_lora(session, o.lora);
  std::printf(
      "plan     policy %s; checkpoints %s; arena %s%s; persistent %s; predicted %.3fx the time of "
      "no recompute\n",
      plan.policy.to_string().c_str(), join(plan.report.checkpoints).c_str(),
      format_bytes(plan.arena_bytes).c_str(),
      budget_text(o.sel, session.config().shape.loss_chunk).c_str(),
      format_bytes(plan.persistent_bytes).c_str(), plan.report.predicted_step_ratio);
  const char* unit = training.kind == "bytes" ? "byte" : "token";
  std::printf("data     %s: %s, unigram entropy %.3f nats/%s\n", o.data.string().c_str(),
              data.summary(unit).c_str(), data.unigram_entropy(), unit);
  if (val)
    std::printf("val      %s: %s; %d batches of %d × %d evaluated, dropout off\n",
                o.val_data->string().c_str(), val->data.summary(unit).c_str(), val->batches,
                cfg.shape.batch, cfg.shape.seq);
  std::fflush(stdout);

  JsonLog log(o.log_json);
  if (o.resumed)
    std::printf("resume   %s: step %d of %d (state loaded in %.2f s)\n",
                o.resumed->dir.string().c_str(), start, o.steps, load_s);
  const int report_every = std::max(1, (o.steps - start) / 20);
  const double tokens_per_step = double(cfg.shape.batch) * cfg.shape.seq * o.accum;
  double total_ms = 0, first_loss = 0, last_loss = 0;
  int last_saved = -1;
  double first_val = NAN, last_val = NAN;
  if (val) {
    const ValidationLoss v = validation_loss(session, *val);
    first_val = last_val = v.loss;
    if (!o.quiet) print_validation(v, start, o.steps, false);
  }
  int s = start;
  const int stop_at = std::max(o.stop_at.value_or(o.steps), start + 1);
  for (; s < stop_at && !signals.received(); ++s) {
    Batch b;
    for (int m = 0; m < o.accum; ++m) {
      const Batch micro = data.batch(static_cast<uint64_t>(s) * o.accum + m, cfg.shape.batch);
      b.tokens.insert(b.tokens.end(), micro.tokens.begin(), micro.tokens.end());
      b.targets.insert(b.targets.end(), micro.targets.begin(), micro.targets.end());
    }
    const double lr = session.learning_rate();
    const auto t0 = std::chrono::steady_clock::now();
    const float loss = session.step(b.tokens, b.targets);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    // Stop at the first non-finite loss or gradient norm: the update of this step may already
    // have spoiled the weights, so nothing from it is saved.
    const float grad_norm = session.last_grad_norm();
    if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
      std::string kept = "; no weights were saved";
      if (last_saved >= 0)
        kept = "; weights from step " + std::to_string(last_saved) + " are in " +
               (o.save ? o.save->string() : o.lora.save_adapter->string());
      throw std::runtime_error(std::string(std::isfinite(loss) ? "the gradient norm" : "the loss") +
                               " is not finite at step " + std::to_string(s + 1) +
                               " (try a smaller --lr or --grad-clip 1)" + kept);
    }
    total_ms += ms;
    if (s == start) first_loss = loss;
    last_loss = loss;
    const double tok_s = tokens_per_step / (ms / 1000.0);
    JsonWriter j;
    j.begin_object()
        .field("step", s + 1)
        .field("loss", double(loss))
        .field("lr", lr)
        .field("ms", ms)
        .field("tokens_per_s", tok_s)
        .field("grad_norm", double(grad_norm))
        .field("device_bytes_allocated", device->ledger().stats().total_live_bytes)
        .field("host_rss_bytes", host_rss_bytes());
    std::optional<ValidationLoss> v;
    if (val && ((o.val_every && (s + 1) % o.val_every == 0) || s + 1 == o.steps)) {
      v = validation_loss(session, *val);
      last_val = v->loss;
      j.field("val_loss", v->loss).field("val_ms", v->ms);
    }
    j.end_object();
    log.line(j);
    const double eta_s = total_ms / (s + 1 - start) * (o.steps - s - 1) / 1000.0;
    if (tty) {
      const int width = 30, done = (s + 1) * width / o.steps;
      std::printf("\r[%s%s] step %d/%d  loss %.4f  lr %.3g  %.0f ms/step  %.0f tok/s  ETA %.0fs   ",
                  std::string(done, '#').c_str(), std::string(width - done, '.').c_str(), s + 1,
                  o.steps, loss, lr, ms, tok_s, eta_s);
      std::fflush(stdout);
    } else if (!o.quiet && ((s + 1) % report_every == 0 || s == start || s + 1 == o.steps)) {
      std::printf("step %d/%d  loss %.4f  lr %.3g  %.1f ms/step  %.0f tok/s  ETA %.0fs\n", s + 1,
                  o.steps, loss, lr, ms, tok_s, eta_s);
      std::fflush(stdout);
    }
    if (v && !o.quiet) print_validation(*v, s + 1, o.steps, tty);
    if (o.save_every && (s + 1) % o.save_every == 0) save_state();
    if ((o.save || o.lora.save_adapter) && o.save_every && (s + 1) % o.save_every == 0) {
      try {
        if (o.save) save_checkpoint(session, *o.save);
        if (o.lora.save_adapter) save_adapter(session, *o.lora.save_adapter, o.lora.base_model);
      } catch (const std::runtime_error& e) {  // non-finite weights or a full disk
        throw std::runtime_error(
            "saving step " + std::to_string(s + 1) + ": " + e.what() +
            (last_saved >= 0 ? "; it holds step " + std::to_string(last_saved) : std::string()));
      }
      last_saved = s + 1;
    }
  }
  if (tty) std::printf("\n");
  if (s < o.steps) {
    // Stopped by a signal at a step boundary: the state, if asked for, is that step's.
    save_state();
    std::fprintf(stderr, "remat: stopped at step %d of %d%s; %s\n", s, o.steps,
                 signals.received() ? "" : " (--stop-at)",
                 o.save_state ? ("state saved in " + o.save_state->string()).c_str()
                              : "no state saved (give --save-state DIR to keep it)");
    log.commit();
    return signals.received() ? 128 + signals.received() : 0;
  }
  if (!(o.save_every && s % o.save_every == 0)) save_state();
  if (o.save) save_checkpoint(session, *o.save);
  save_lora_outputs(session, o.lora, false);

  if (val)
    std::printf("val      loss %.4f -> %.4f on %d batches of %s\n", first_val, last_val,
                val->batches, o.val_data->string().c_str());
  const MemoryReport mem = session.memory();
  const double mean_ms = total_ms / std::max(1, o.steps - start);
  std::printf(
      "done     %d steps: loss %.4f -> %.4f (unigram entropy %.4f); %.1f ms/step, %.0f tok/s\n",
      o.steps, first_loss, last_loss, data.unigram_entropy(), mean_ms,
      tokens_per_step / (mean_ms / 1000.0));
  std::printf("memory   device allocated %s = persistent %s + arena %s",
              format_bytes(mem.device_bytes_allocated).c_str(),
              format_bytes(mem.persistent_bytes).c_str(), format_bytes(mem.arena_bytes).c_str());
  for (const auto& [name, bytes] : mem.extras)
    std::printf(" + %s %s", name.c_str(), format_bytes(bytes).c_str());
  std::printf(" (%s plan)\n", mem.device_bytes_allocated == mem.planned_total_bytes
                                  ? "exactly as"
                                  : "DIFFERS from");
  if (o.save) std::printf("saved    %s\n", o.save->string().c_str());
  if (o.lora.save_adapter) std::printf("adapter  %s\n", o.lora.save_adapter->string().c_str());
  if (o.lora.merge_out) std::printf("merged   %s\n", o.lora.merge_out->string().c_str());
  if (o.sample > 0) print_sample(session, training, o);

  JsonWriter j;
  j.begin_object()
      .field("summary", true)
      .field("steps", o.steps)
      .field("policy", plan.policy.to_string());
  j.key("checkpoints").begin_array();
  for (const auto& c : plan.report.checkpoints) j.value(c);
  j.end_array();
  j.field("arena_bytes", plan.arena_bytes)
      .field("persistent_bytes", plan.persistent_bytes)
      .field("planned_total_bytes", mem.planned_total_bytes)
      .field("device_bytes_allocated", mem.device_bytes_allocated)
      .field("first_loss", double(first_loss))
      .field("final_loss", double(last_loss))
      .field("unigram_entropy", data.unigram_entropy())
      .field("mean_ms", mean_ms)
      .field("tokens_per_s", tokens_per_step / (mean_ms / 1000.0));
  if (val)
    j.field("val_batches", val->batches)
        .field("initial_val_loss", first_val)
        .field("final_val_loss", last_val);
  // With REMAT_VALIDATION=1 the Khronos layer checks every call; report what it said.
  if (device->instance().validation_enabled()) {
    const auto messages = device->instance().validation_messages();
    j.field("validation_messages", static_cast<uint64_t>(messages.size()));
    for (const auto& m : messages) std::fprintf(stderr, "validation %s\n", m.c_str());
  } else {
    j.key("validation_messages").null();
  }
  j.end_object();
  log.line(j);
  log.commit();
  return 0;
}

}  // namespace remat::cli
