// `remat train`'s flags: what it accepts (its help text) and the options they give, checked
// before anything runs; a resumed run's flags come from its training state.
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
#include "data_args.h"
#include "formats/gguf_model_writer.h"
#include "formats/gguf_tokenizer.h"
#include "formats/gpt2_weights.h"
#include "formats/hf_folder.h"
#include "formats/peft_adapter.h"
#include "formats/safetensors.h"
#include "formats/token_dataset.h"
#include "formats/weight_files.h"
#include "graph/delta_rule_workspace.h"
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

#include "train_options.h"

namespace remat::cli {
namespace {

// --save: a file (or with `folder`, a folder) in an existing, writable folder.
// Checked before anything runs, so a typo fails at once instead of after training.
void check_output_file(const std::filesystem::path& path, const std::string& flag,
                       bool folder = false) {
  if (!folder) return check_output_path(path.string(), flag);
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec))
    throw UsageError(path.string() + ": is " + existing_kind(path.string()) + "; " + flag +
                     " takes a path ending in .safetensors or a folder for a Hugging Face model, "
                     "or a path ending in .gguf");
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

void refuse_quantized_full_fine_tune(const std::filesystem::path& init) {
  const WeightFiles w = WeightFiles::open(init);
  if (!w.gguf()) return;
  if (const std::string why = full_fine_tune_refusal(*w.gguf(), "add --lora R (e.g. --lora 8)");
      !why.empty())
    throw UsageError(why);
}

// A model the GGUF writer would refuse is refused before a step runs, by the writer's own rule
// (check_gguf_model), not after training. An adapter's architecture follows the same rule.
void refuse_unwritable_gguf(const TrainOptions& o) {
  auto check = [&](const std::optional<std::filesystem::path>& out, const char* flag,
                   GgmlType matrix_type) {
    if (!out || !names_gguf_file(*out)) return;
    try {
      check_gguf_model(o.sel.model, matrix_type);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string(flag) + " " + out->string() + ": " + e.what());
    }
  };
  check(o.save, "--save", o.gguf.matrix_type);
  check(o.lora.merge_out, "--merge-out", o.gguf.matrix_type);
  check(o.lora.save_adapter, "--save-adapter", GgmlType::f32);
}

}  // namespace

CommandSpec train_spec() {
  CommandSpec c{
      "train", "[MODEL]", 1,
      "Trains on FILE read as bytes (vocabulary 256), or as tokens: its text encoded with the\n"
      "BPE tokenizer at --tokenizer PATH (see remat tokenize), an llm.c token file\n"
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
      "--shuffle SEED the (k mod n)-th of epoch k div n's permutation of them. --pack puts\n"
      "several examples in a row instead: first fit, in file (or the epoch's) order, each\n"
      "example in the first row of its pass with room left, rows never mixing two passes;\n"
      "each example attends only to itself and its positions start at 0. --val-data JSONL is\n"
      "packed too: the examples one example a row would evaluate, in fewer rows, so the\n"
      "validation loss (a mean over every trained target) is the same to float rounding.\n"
      "--save-state DIR keeps everything needed to continue (weights, AdamW moments, step, the\n"
      "run's settings and data hash; docs/training-state.md) and --resume DIR continues it, bit\n"
      "for bit as if never stopped; SIGINT or SIGTERM stops at the next step, saving the state.\n",
      data_flags("training text or tokens (required)")};
  const std::vector<FlagSpec> validation = {
      {"--val-data", "FILE", "held-out text or tokens for the validation loss", ""},
      {"--val-every", "K", "evaluate --val-data every K steps (and after the last)", ""},
      {"--val-batches", "N", "evaluate at most N batches of --val-data", "8"},
      {"--init", "PATH",
       "start from these weights: a Hugging Face model folder (gpt2, llama, qwen2, qwen3), which "
       "sets the model, or a .safetensors file (GPT-2 sets the model; Llama-family needs "
       "--model)",
       ""}};
  c.flags.insert(c.flags.end(), validation.begin(), validation.end());
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
       "write the trained weights (atomically) to PATH.safetensors, to PATH.gguf as a llama.cpp "
       "model, or else into the folder PATH as a Hugging Face model (config.json, "
       "model.safetensors)",
       ""},
      {"--save-dtype", "T",
       "f32, f16 or bf16: the matrices of a .gguf --save or --merge-out (vectors stay f32)", "f32"},
      {"--save-every", "K",
       "also save every K steps (with --save, --save-state and --save-adapter)", ""},
      {"--save-state", "DIR", "write the training state here (atomically) at the end and on stop",
       ""},
      {"--resume", "DIR", "continue the run saved in DIR; --steps may be raised", ""},
      {"--stop-at", "S", "stop after step S of --steps and save the state, as on a signal", ""},
      {"--log-json", "FILE", "one JSON object per step, then a summary", ""},
      {"--sample", "N", "after training, continue the data's first tokens by N tokens", "0"},
      {"--delta-chunk", "TOKENS",
       "Qwen3.5: tokens per chunk of the Gated DeltaNet recurrence (0: one chunk, else a multiple "
       "of 64); auto plans each "
       "length that fits a binding and keeps the best (as remat plan)",
       "auto"},
      {"--quiet", "", "no progress output", ""},
  };
  c.flags.insert(c.flags.end(), training.begin(), training.end());
  for (FlagSpec& f : train_lora_flags()) c.flags.push_back(std::move(f));
  for (FlagSpec& f : preference_flags()) c.flags.push_back(std::move(f));
  return c;
}

TrainOptions parse_train_options(const std::vector<std::string>& user_argv) {
  TrainOptions o;
  std::vector<std::string> argv = user_argv;
  std::optional<ModelConfig> base;
  bool model_named = false;
  if (const Args given(user_argv, train_spec()); auto dir = given.get("--resume")) {
    o.resumed = read_resumed(*dir);
    argv = arguments_of_state(given, argv, o.resumed->state);
    model_named = given.has("--model") || !given.positionals().empty();
  }
  Args a(argv, train_spec());
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
  if (a.has("--delta-chunk") && !o.sel.model.qwen35)
    throw UsageError("--delta-chunk is for Qwen3.5 models (Gated DeltaNet layers)");
  if (a.get_or_default("--delta-chunk") != "auto") {
    o.choose_delta_chunk = false;
    o.sel.shape.delta_chunk = static_cast<int>(a.get_int("--delta-chunk", 0, 1 << 30).value_or(0));
    if (const char* why = delta_chunk_refusal(o.sel.shape.delta_chunk); *why != '\0')
      throw UsageError("--delta-chunk " + std::string(why) + ", got " +
                       std::to_string(o.sel.shape.delta_chunk));
  }
  if (o.init) WeightFiles::open(*o.init);  // the weights' headers, before anything runs
  if (!a.has("--data")) throw UsageError("--data FILE is required (any file; it is read as bytes)");
  const DataOptions data = parse_data_flags(a, o.init);
  o.data = *data.data;
  o.tokenizer = data.tokenizer;
  o.data_format = data.format;
  o.jsonl = data.jsonl;
  if (auto v = a.get("--val-data")) o.val_data = *v;
  o.val_every = static_cast<int>(a.get_int("--val-every", 1, 100000000).value_or(0));
  o.val_batches = static_cast<int>(a.get_int_or_default("--val-batches", 1, 1000000));
  if (!o.val_data && (a.has("--val-every") || a.has("--val-batches")))
    throw UsageError("--val-every and --val-batches need --val-data FILE");
  o.sel.shape.packed = o.jsonl.pack;
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
    check_output_file(*o.save, "--save",
                      !names_safetensors_file(*o.save) && !names_gguf_file(*o.save));
  }
  if (auto v = a.get("--log-json")) {
    o.log_json = *v;
    check_output_path(o.log_json->string(), "--log-json");
  }
  o.lora = parse_train_lora(a, o.init, o.sel.model);
  o.gguf.adapter_type = o.lora.adapter_type;
  if (const std::string t = a.get_or_default("--save-dtype"); t == "f16")
    o.gguf.matrix_type = GgmlType::f16;
  else if (t == "bf16")
    o.gguf.matrix_type = GgmlType::bf16;
  else if (t != "f32")
    throw UsageError("--save-dtype must be f32, f16 or bf16, not '" + t + "'");
  if (a.has("--save-dtype") && !(o.save && names_gguf_file(*o.save)) &&
      !(o.lora.merge_out && names_gguf_file(*o.lora.merge_out)))
    throw UsageError("--save-dtype needs --save M.gguf or --merge-out M.gguf");
  // A model saved as GGUF keeps the tokenizer of the GGUF model it started from.
  if (o.init && names_gguf_file(*o.init))
    o.gguf.extra = gguf_tokenizer_metadata(GgufFile::open(*o.init).metadata());
  refuse_unwritable_gguf(o);
  if (o.init && !o.lora.spec.enabled()) refuse_quantized_full_fine_tune(*o.init);
  keep_base_blocks(o.sel, a, o.init, o.lora.spec);
  // The session chooses the loss chunk unless given; sampling keeps the whole logits.
  if (o.sample > 0 && (o.sel.shape.loss_chunk != 0 || a.get("--loss-chunk") == "auto"))
    throw UsageError("--sample reads a row's whole logits; it needs --loss-chunk 0");
  if (o.lora.spec.enabled() && o.save)
    throw UsageError(
        "--save writes the model's weights, which LoRA leaves frozen; use "
        "--save-adapter DIR (or A.gguf) or --merge-out OUT.safetensors (or M.gguf)");
  if (auto v = a.get("--save-state")) {
    o.save_state = *v;
    std::error_code ec;
    if (std::filesystem::exists(*o.save_state, ec) &&
        !std::filesystem::is_directory(*o.save_state, ec))
      throw UsageError(*v + ": is " + existing_kind(*v) + "; --save-state needs a folder");
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
  o.pref = parse_preference_options(a);
  return o;
}

SessionConfig session_config(const TrainOptions& o) {
  SessionConfig cfg;
  cfg.model = o.sel.model;
  cfg.lora = o.lora.spec;
  cfg.shape = o.sel.shape;
  cfg.policy = o.sel.policy;
  cfg.arena_budget = o.sel.arena;
  cfg.memory_budget = o.sel.memory;
  cfg.choose_loss_chunk = o.sel.choose_loss_chunk && o.sample == 0;  // sampling: whole logits
  cfg.choose_delta_chunk = o.choose_delta_chunk && cfg.model.qwen35;
  cfg.optimizer = o.opt;
  cfg.schedule = o.schedule;
  cfg.accum = o.accum;
  cfg.seed = o.seed;
  cfg.costs = o.sel.costs ? &*o.sel.costs : nullptr;
  return cfg;
}

void refuse_unwritable_outputs(const Session& session, const TrainOptions& o) {
  auto check = [&](const std::optional<std::filesystem::path>& out, const char* flag) {
    if (!out) return;
    try {
      check_checkpoint_writable(session, *out);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string(flag) + " " + out->string() + ": " + e.what());
    }
  };
  check(o.save, "--save");
  check(o.lora.merge_out, "--merge-out");
}

}  // namespace remat::cli
