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
#include "delta_text.h"
#include "device_args.h"
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
#include "train_options.h"
#include "train_preference.h"
#include "train_resume.h"

namespace remat::cli {
namespace {

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
void print_sample(Session& session, const TrainingData& training, const TrainOptions& o) {
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
  double loss = 0;              // the mean over the trained targets of the evaluated batches
  uint64_t trained_tokens = 0;  // those targets: the same packed or not
  double ms = 0;                // wall time of the evaluation, not counted in ms/step
};

ValidationLoss validation_loss(Session& session, const ValidationData& val) {
  const auto t0 = std::chrono::steady_clock::now();
  double sum = 0;
  uint64_t targets = 0;
  for (int k = 0; k < val.batches; ++k) {
    const Batch b = val.batch(k, session.config().shape.batch);
    // Each batch's loss is its trained targets' mean: weighted by their count, every target of
    // every batch counts once, however many targets packing put in a batch.
    const auto trained =
        uint64_t(b.targets.size() - std::count(b.targets.begin(), b.targets.end(), kIgnoreTarget));
    sum += session.evaluate(b.tokens, b.targets, b.positions) * double(trained);
    targets += trained;
  }
  const auto t1 = std::chrono::steady_clock::now();
  return {sum / double(targets), targets,
          std::chrono::duration<double, std::milli>(t1 - t0).count()};
}

void print_validation(const ValidationLoss& v, int step, int steps, bool tty) {
  // On a terminal the line replaces the progress bar, which continues below it.
  std::printf("%sval      step %d/%d  loss %.4f  (%.0f ms)%s\n", tty ? "\r" : "", step, steps,
              v.loss, v.ms, tty ? std::string(40, ' ').c_str() : "");
  std::fflush(stdout);
}

}  // namespace

int run_train(const std::vector<std::string>& argv) {
  if (print_help_if_requested(argv, train_spec())) return 0;
  const TrainOptions o = parse_train_options(argv);
  if (o.pref.objective) return run_train_preference(o);
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
  auto device = open_device(o.sel.device_profile);

  const SessionConfig cfg = session_config(o);
  // The run's files are hashed only when a state records them or is checked against them.
  RunRecord run;
  if (o.save_state || o.resumed)
    run = training_run_record(o.data, o.tokenizer, o.init, o.data_format, o.jsonl,
                              o.resumed ? &*o.resumed : nullptr);
  if (o.save_state || o.resumed) {
    record_lora(run, o.lora.spec, o.sel.model, o.sel.shape.weight_dtype);
    record_memory(run, o.sel.memory);
  }
  if (o.resumed) require_same_run(*o.resumed, cfg, o.steps, run);
  Session session(*device, cfg);
  if (o.init) session.load(*o.init);
  refuse_unwritable_outputs(session, o);
  const auto load_start = std::chrono::steady_clock::now();
  if (o.resumed) {
    load_training_state(session, o.resumed->dir);
    require_pack_position(*o.resumed,
                          uint64_t(session.steps_done()) * o.accum * uint64_t(cfg.shape.batch));
  }
  const double load_s = seconds_since(load_start);
  if (!o.resumed) load_lora_init(session, o.lora);
  const int start = static_cast<int>(session.steps_done());
  const bool tty = isatty(STDOUT_FILENO) && !o.quiet;
  auto save_state = [&] {
    if (!o.save_state) return;
    const auto t0 = std::chrono::steady_clock::now();
    if (const ExampleRows* e = data.examples())
      record_pack_position(run, *e,
                           uint64_t(session.steps_done()) * o.accum * uint64_t(cfg.shape.batch));
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
  std::printf("%s", delta_rule_line(session).c_str());
  std::printf("%s", data_report(o.data, training, cfg.shape.batch * o.accum).c_str());
  const char* unit = training.kind == "bytes" ? "byte" : "token";
  if (val)
    std::printf("val      %s: %s; %d batches of %d × %d evaluated%s, dropout off\n",
                o.val_data->string().c_str(), rows_summary(val->data, unit).c_str(), val->batches,
                cfg.shape.batch, cfg.shape.seq, val->packing_summary().c_str());
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
  uint64_t val_trained = 0;
  if (val) {
    const ValidationLoss v = validation_loss(session, *val);
    first_val = last_val = v.loss;
    val_trained = v.trained_tokens;
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
      b.positions.insert(b.positions.end(), micro.positions.begin(), micro.positions.end());
    }
    // The targets this step trains, all micro-batches together: what packing raises per step.
    const auto trained_tokens =
        uint64_t(b.targets.size()) -
        uint64_t(std::count(b.targets.begin(), b.targets.end(), kIgnoreTarget));
    const double lr = session.learning_rate();
    const auto t0 = std::chrono::steady_clock::now();
    const float loss = session.step(b.tokens, b.targets, b.positions);
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
        .field("trained_tokens", trained_tokens)
        .field("trained_tokens_per_s", double(trained_tokens) / (ms / 1000.0))
        .field("grad_norm", double(grad_norm))
        .field("device_bytes_allocated", device->ledger().stats().total_live_bytes)
        .field("host_rss_bytes", host_rss_bytes());
    std::optional<ValidationLoss> v;
    if (val && ((o.val_every && (s + 1) % o.val_every == 0) || s + 1 == o.steps)) {
      v = validation_loss(session, *val);
      last_val = v->loss;
      j.field("val_loss", v->loss)
          .field("val_trained_tokens", v->trained_tokens)
          .field("val_ms", v->ms);
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
        if (o.save) save_checkpoint(session, *o.save, o.gguf);
        if (o.lora.save_adapter)
          save_adapter(session, *o.lora.save_adapter, o.lora.base_model, o.gguf);
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
  if (o.save) save_checkpoint(session, *o.save, o.gguf);
  save_lora_outputs(session, o.lora, o.gguf, false);

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
        .field("val_trained_tokens", val_trained)
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
