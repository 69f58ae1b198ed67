#include "train_preference.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/atomic_file.h"
#include "base/json_writer.h"
#include "delta_text.h"
#include "device_args.h"
#include "formats/tokenizer_source.h"
#include "memory_text.h"
#include "runtime/session_files.h"
#include "runtime/training_state.h"
#include "runtime/vulkan/device.h"
#include "stop_signal.h"
#include "train_lora.h"
#include "train_options.h"
#include "train_resume.h"

namespace remat::cli {
namespace {

std::string hex_doubles(const std::vector<double>& v) {
  std::string s;
  char buf[40];
  for (double x : v) {
    std::snprintf(buf, sizeof buf, "%a", x);
    s += (s.empty() ? "" : ",") + std::string(buf);
  }
  return s;
}

std::vector<double> doubles_of(const std::string& s, const char* key) {
  std::vector<double> out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t end = std::min(s.find(',', i), s.size());
    const std::string item = s.substr(i, end - i);
    char* stop = nullptr;
    const double x = std::strtod(item.c_str(), &stop);
    if (item.empty() || *stop != '\0')
      throw UsageError(std::string("--resume: the state's ") + key + " holds '" + item +
                       "', not a number");
    out.push_back(x);
    i = end + 1;
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The metrics worth a text line: DPO's accuracy and margin, KTO's KL; all go to --log-json.
std::string metrics_text(const PreferenceStep& p) {
  std::string s;
  char buf[64];
  for (const auto& [name, value] : p.metrics)
    if (name == "rewards/accuracies" || name == "rewards/margins" || name == "kl") {
      std::snprintf(buf, sizeof buf, "  %s %.4f", name.c_str(), value);
      s += buf;
    }
  return s;
}

void refuse_sft_only(const TrainOptions& o) {
  const char* flag = o.val_data        ? "--val-data"
                     : o.jsonl.pack    ? "--pack"
                     : o.jsonl.shuffle ? "--shuffle"
                     : o.sample > 0    ? "--sample"
                     : o.lora.init     ? "--lora-init"
                                       : nullptr;
  if (flag)
    throw UsageError(std::string(flag) + " is not available with --objective " +
                     objective_name(*o.pref.objective) +
                     (std::string(flag) == "--lora-init"
                          ? " (the reference model is the base with adapters off)"
                          : ""));
  if (!o.tokenizer)
    throw UsageError(std::string("--objective ") + objective_name(*o.pref.objective) +
                     " reads JSONL preference data and needs --tokenizer PATH");
}

}  // namespace

PreferenceConfig PreferenceOptions::config() const {
  PreferenceConfig c;
  c.objective = objective.value_or(PreferenceObjective::dpo);
  c.dpo = dpo;
  c.kto = kto;
  return c;
}

std::vector<FlagSpec> preference_flags() {
  return {
      {"--objective", "O",
       "sft, or dpo on {prompt, chosen, rejected} pairs, or kto on {prompt, completion, label} "
       "examples (TRL's formats; --batch counts pairs or examples)",
       "sft"},
      {"--beta", "B", "DPO's and KTO's beta: the strength of the pull towards the reference",
       "0.1"},
      {"--label-smoothing", "E", "DPO: conservative DPO's label smoothing, in [0, 0.5]", "0"},
      {"--desirable-weight", "W", "KTO: the weight of desirable examples' losses", "1"},
      {"--undesirable-weight", "W", "KTO: the weight of undesirable examples' losses", "1"},
  };
}

PreferenceOptions parse_preference_options(const Args& a) {
  PreferenceOptions p;
  const std::string name = a.get_or_default("--objective");
  if (name == "dpo")
    p.objective = PreferenceObjective::dpo;
  else if (name == "kto")
    p.objective = PreferenceObjective::kto;
  else if (name != "sft")
    throw UsageError("--objective must be sft, dpo or kto, not '" + name + "'");
  const bool dpo = p.objective == PreferenceObjective::dpo;
  const bool kto = p.objective == PreferenceObjective::kto;
  for (const auto& [flag, ok] :
       {std::pair{"--beta", dpo || kto}, std::pair{"--label-smoothing", dpo},
        std::pair{"--desirable-weight", kto}, std::pair{"--undesirable-weight", kto}})
    if (a.has(flag) && !ok)
      throw UsageError(std::string(flag) + " is not an option of --objective " + name);
  p.dpo.beta = p.kto.beta = a.get_double_or_default("--beta");
  p.dpo.label_smoothing = a.get_double_or_default("--label-smoothing");
  p.kto.desirable_weight = a.get_double_or_default("--desirable-weight");
  p.kto.undesirable_weight = a.get_double_or_default("--undesirable-weight");
  if (!(p.dpo.beta > 0)) throw UsageError("--beta must be positive");
  if (!(p.dpo.label_smoothing >= 0 && p.dpo.label_smoothing <= 0.5))
    throw UsageError("--label-smoothing must be in [0, 0.5]");
  if (!(p.kto.desirable_weight >= 0) || !(p.kto.undesirable_weight >= 0))
    throw UsageError("--desirable-weight and --undesirable-weight must be at least 0");
  return p;
}

void record_preference(RunRecord& run, const PreferenceOptions& p) {
  if (!p.objective) return;
  run.settings["objective"] = objective_name(*p.objective);
  run.settings["beta"] = json_number(p.dpo.beta);
  if (*p.objective == PreferenceObjective::dpo) {
    run.settings["label_smoothing"] = json_number(p.dpo.label_smoothing);
  } else {
    run.settings["desirable_weight"] = json_number(p.kto.desirable_weight);
    run.settings["undesirable_weight"] = json_number(p.kto.undesirable_weight);
  }
}

void record_reference(RunRecord& run, const ReferenceLogProbs& r) {
  run.settings["reference_logps"] = hex_doubles(r.answers);
  if (!r.kl.empty()) run.settings["reference_kl_logps"] = hex_doubles(r.kl);
}

ReferenceLogProbs reference_of(const RunRecord& run) {
  ReferenceLogProbs r;
  const auto a = run.settings.find("reference_logps");
  if (a == run.settings.end())
    throw UsageError("--resume: the state holds no reference log-probs (reference_logps)");
  r.answers = doubles_of(a->second, "reference_logps");
  if (auto k = run.settings.find("reference_kl_logps"); k != run.settings.end())
    r.kl = doubles_of(k->second, "reference_kl_logps");
  return r;
}

void add_preference_arguments(const Args& given, std::vector<std::string>& argv,
                              const TrainingState& st) {
  const auto objective = st.run.settings.find("objective");
  if (objective == st.run.settings.end()) return;
  auto add = [&](const std::string& flag, const std::string& value) {
    if (given.has(flag)) return;
    argv.push_back(flag);
    argv.push_back(value);
  };
  add("--objective", objective->second);
  add("--batch", std::to_string(st.shape.batch / 2));
  for (const auto& [key, flag] :
       {std::pair{"beta", "--beta"}, std::pair{"label_smoothing", "--label-smoothing"},
        std::pair{"desirable_weight", "--desirable-weight"},
        std::pair{"undesirable_weight", "--undesirable-weight"}})
    if (auto f = st.run.settings.find(key); f != st.run.settings.end()) add(flag, f->second);
}

int run_train_preference(const TrainOptions& o) {
  refuse_sft_only(o);
  const PreferenceObjective objective = *o.pref.objective;
  const int examples = o.sel.shape.batch;
  auto tokenizer = load_tokenizer_from(*o.tokenizer);
  if (tokenizer->vocab_size() > std::size_t(o.sel.model.vocab))
    throw UsageError("the tokenizer has " + std::to_string(tokenizer->vocab_size()) +
                     " tokens but the model's vocabulary is " + std::to_string(o.sel.model.vocab));
  const PreferenceRows rows = read_preference_rows(o.data, objective, *tokenizer, *o.tokenizer,
                                                   o.jsonl.chat_template, o.sel.shape.seq);
  rows.check_vocab(std::size_t(o.sel.model.vocab));
  const StopSignals signals;
  auto device = open_device(o.sel.device_profile);

  const SessionConfig sft = session_config(o);
  const SessionConfig cfg = preference_session_config(sft, examples);
  RunRecord run;
  if (o.save_state || o.resumed) {
    run = training_run_record(o.data, o.tokenizer, o.init, "jsonl", o.jsonl,
                              o.resumed ? &*o.resumed : nullptr);
    record_lora(run, o.lora.spec, o.sel.model, o.sel.shape.weight_dtype);
    record_memory(run, o.sel.memory);
    record_preference(run, o.pref);
  }
  if (o.resumed) require_same_run(*o.resumed, cfg, o.steps, run);
  Session session(*device, cfg);
  if (o.init) session.load(*o.init);
  refuse_unwritable_outputs(session, o);
  PreferenceTrainer trainer(session, rows, o.pref.config(), examples);
  const auto t_ref = std::chrono::steady_clock::now();
  if (o.resumed) {
    load_training_state(session, o.resumed->dir);
    try {
      trainer.set_reference(reference_of(o.resumed->state.run));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--resume: ") + e.what());
    }
  } else {
    // Before any step: under LoRA the adapters are zero (the base), else the initial weights.
    trainer.compute_reference();
  }
  const double ref_s = seconds_since(t_ref);
  if (o.save_state) record_reference(run, trainer.reference());
  const int start = static_cast<int>(session.steps_done());
  const bool tty = isatty(STDOUT_FILENO) && !o.quiet;

  const Plan& plan = session.plan();
  const char* name = objective_name(objective);
  std::printf("device   %s\n", device->summary().c_str());
  std::printf("model    %s: %s, %.2fM parameters; %s batch %d %s × seq %d (%d rows)%s\n",
              o.sel.model_name.c_str(), model_shape_text(cfg.model).c_str(),
              double(cfg.model.parameter_count()) / 1e6, name, examples,
              objective == PreferenceObjective::dpo ? "pairs" : "examples", cfg.shape.seq,
              cfg.shape.batch,
              o.accum > 1 ? (" × " + std::to_string(o.accum) + " micro-batches").c_str() : "");
  print_lora(session, o.lora);
  std::printf(
      "plan     policy %s; arena %s%s; persistent %s; predicted %.3fx the time of no "
      "recompute\n",
      plan.policy.to_string().c_str(), format_bytes(plan.arena_bytes).c_str(),
      budget_text(o.sel, session.config().shape.loss_chunk).c_str(),
      format_bytes(plan.persistent_bytes).c_str(), plan.report.predicted_step_ratio);
  std::printf("%s", delta_rule_line(session).c_str());
  const PreferenceReport& rep = rows.report();
  std::printf("data     %s: %zu %s, %zu cut to --seq + 1 tokens, %zu dropped", o.data.c_str(),
              rep.examples, objective == PreferenceObjective::dpo ? "pairs" : "examples", rep.cut,
              rep.dropped);
  if (rep.dropped) std::printf(" (first at line %zu)", rep.first_dropped_line);
  if (objective == PreferenceObjective::kto)
    std::printf("; %zu desirable, %zu undesirable", rep.desirable, rep.undesirable);
  std::printf("\n");
  std::printf("objective %s, beta %g", name, o.pref.dpo.beta);
  if (objective == PreferenceObjective::dpo)
    std::printf(", label smoothing %g", o.pref.dpo.label_smoothing);
  else
    std::printf(", desirable weight %g, undesirable weight %g", o.pref.kto.desirable_weight,
                o.pref.kto.undesirable_weight);
  std::printf("; reference log-probs: %s (%zu examples, host, %.2f s)\n",
              o.resumed ? "from the state" : "precomputed", rows.size(), ref_s);
  if (o.resumed)
    std::printf("resume   %s: step %d of %d\n", o.resumed->dir.string().c_str(), start, o.steps);
  std::fflush(stdout);

  std::optional<AtomicFile> log;
  if (o.log_json) log.emplace(*o.log_json);
  auto log_line = [&](const JsonWriter& j) {
    if (!log) return;
    const std::string text = j.str() + "\n";
    log->write(text.data(), text.size());
  };
  auto save_state = [&] {
    if (!o.save_state) return;
    save_training_state(session, *o.save_state, run);
    if (!o.quiet)
      std::printf("%sstate    step %u saved in %s\n", tty ? "\r" : "", session.steps_done(),
                  o.save_state->string().c_str());
  };
  const int report_every = std::max(1, (o.steps - start) / 20);
  double total_ms = 0, first_loss = 0, last_loss = 0;
  PreferenceStep last;
  int s = start;
  const int stop_at = std::max(o.stop_at.value_or(o.steps), start + 1);
  for (; s < stop_at && !signals.received(); ++s) {
    const double lr = session.learning_rate();
    const auto t0 = std::chrono::steady_clock::now();
    last = trainer.step(uint64_t(s));
    const double ms = seconds_since(t0) * 1000.0;
    const float grad_norm = session.last_grad_norm();
    if (!std::isfinite(last.loss) || !std::isfinite(grad_norm))
      throw std::runtime_error(
          std::string(std::isfinite(last.loss) ? "the gradient norm" : "the loss") +
          " is not finite at step " + std::to_string(s + 1) +
          " (try a smaller --lr or --grad-clip 1); no weights were saved");
    total_ms += ms;
    if (s == start) first_loss = last.loss;
    last_loss = last.loss;
    JsonWriter j;
    j.begin_object()
        .field("step", s + 1)
        .field("loss", last.loss)
        .field("lr", lr)
        .field("ms", ms)
        .field("grad_norm", double(grad_norm));
    for (const auto& [metric, value] : last.metrics) j.field(metric, value);
    j.end_object();
    log_line(j);
    if (!o.quiet && (tty || (s + 1) % report_every == 0 || s == start || s + 1 == o.steps)) {
      std::printf("%sstep %d/%d  loss %.4f%s  lr %.3g  %.1f ms/step%s", tty ? "\r" : "", s + 1,
                  o.steps, last.loss, metrics_text(last).c_str(), lr, ms, tty ? "   " : "\n");
      std::fflush(stdout);
    }
    if (o.save_every && (s + 1) % o.save_every == 0) save_state();
  }
  if (tty) std::printf("\n");
  if (s < o.steps) {
    save_state();
    std::fprintf(stderr, "remat: stopped at step %d of %d%s; %s\n", s, o.steps,
                 signals.received() ? "" : " (--stop-at)",
                 o.save_state ? ("state saved in " + o.save_state->string()).c_str()
                              : "no state saved (give --save-state DIR to keep it)");
    if (log) log->commit();
    return signals.received() ? 128 + signals.received() : 0;
  }
  if (!(o.save_every && s % o.save_every == 0)) save_state();
  if (o.save) save_checkpoint(session, *o.save, o.gguf);
  save_lora_outputs(session, o.lora, o.gguf, false);
  const MemoryReport mem = session.memory();
  std::printf("done     %d steps: loss %.4f -> %.4f%s; %.1f ms/step\n", o.steps, first_loss,
              last_loss, metrics_text(last).c_str(), total_ms / std::max(1, o.steps - start));
  std::printf("memory   device allocated %s = persistent %s + arena %s",
              format_bytes(mem.device_bytes_allocated).c_str(),
              format_bytes(mem.persistent_bytes).c_str(), format_bytes(mem.arena_bytes).c_str());
  for (const auto& [extra, bytes] : mem.extras)
    std::printf(" + %s %s", extra.c_str(), format_bytes(bytes).c_str());
  std::printf(" (%s plan); reference log-probs: precomputed (%zu examples, host)\n",
              mem.device_bytes_allocated == mem.planned_total_bytes ? "exactly as" : "DIFFERS from",
              rows.size());
  if (o.save) std::printf("saved    %s\n", o.save->string().c_str());
  if (o.lora.save_adapter) std::printf("adapter  %s\n", o.lora.save_adapter->string().c_str());
  JsonWriter j;
  j.begin_object()
      .field("summary", true)
      .field("objective", std::string(name))
      .field("steps", o.steps)
      .field("policy", plan.policy.to_string())
      .field("arena_bytes", plan.arena_bytes)
      .field("planned_total_bytes", mem.planned_total_bytes)
      .field("device_bytes_allocated", mem.device_bytes_allocated)
      .field("first_loss", first_loss)
      .field("final_loss", last_loss)
      .field("mean_ms", total_ms / std::max(1, o.steps - start))
      .field("reference_examples", uint64_t(rows.size()));
  j.end_object();
  log_line(j);
  if (log) log->commit();
  return 0;
}

}  // namespace remat::cli
