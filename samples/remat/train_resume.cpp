#include "train_resume.h"

#include <stdexcept>

#include "base/json_writer.h"
#include "train_preference.h"

namespace remat::cli {
namespace {

std::string number(double v) {
  return json_number(v);
}

std::string model_text(const ModelConfig& m) {
  return std::string(architecture_name(m.arch)) + " L" + std::to_string(m.layers) + " C" +
         std::to_string(m.dim) + " H" + std::to_string(m.heads) + " V" + std::to_string(m.vocab) +
         " ctx" + std::to_string(m.ctx);
}

}  // namespace

Resumed read_resumed(const std::filesystem::path& dir) {
  try {
    return {dir, read_training_state(dir)};
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--resume: ") + e.what());
  }
}

std::vector<std::string> arguments_of_state(const Args& given, std::vector<std::string> argv,
                                            const TrainingState& st) {
  auto add = [&](const std::string& flag, const std::string& value) {
    if (given.has(flag)) return;
    argv.push_back(flag);
    argv.push_back(value);
  };
  // A preference run's shape counts two rows per example; --batch counts examples.
  add_preference_arguments(given, argv, st);
  if (!st.run.settings.count("objective")) add("--batch", std::to_string(st.shape.batch));
  add("--seq", std::to_string(st.shape.seq));
  add("--dropout", number(st.shape.dropout));
  add("--loss-chunk", std::to_string(st.shape.loss_chunk));
  if (!given.has("--dtype")) add("--act-dtype", std::string(dtype_name(st.shape.activation_dtype)));
  add("--accum", std::to_string(st.accum));
  add("--seed", std::to_string(st.seed));
  add("--lr", number(st.optimizer.lr));
  add("--wd", number(st.optimizer.weight_decay));
  add("--beta1", number(st.optimizer.beta1));
  add("--beta2", number(st.optimizer.beta2));
  add("--eps", number(st.optimizer.eps));
  add("--grad-clip", number(st.optimizer.grad_clip));
  add("--lr-schedule", lr_decay_name(st.schedule.decay));
  add("--warmup-steps", std::to_string(st.schedule.warmup_steps));
  // A schedule given on the command line is compared with the state's, not mixed with its ratio.
  const auto schedule = given.get("--lr-schedule");
  if (st.schedule.decay == LrDecay::cosine && (!schedule || *schedule == "cosine"))
    add("--min-lr-ratio", number(st.schedule.min_lr_ratio));
  if (auto steps = given.get_int("--steps", 1, 100000000); steps && *steps <= int64_t(st.step))
    throw UsageError("--resume: the state is at step " + std::to_string(st.step) +
                     " and --steps is " + std::to_string(*steps) +
                     "; give a larger --steps to train further");
  if (st.schedule.total_steps > 0) add("--steps", std::to_string(st.schedule.total_steps));
  if (auto f = st.run.settings.find("data_format"); f != st.run.settings.end())
    add("--data-format", f->second);
  // The run's files where it read them, unless given anew. The initial weights are loaded again
  // before the state: weights the run did not train (none for full training) come from them.
  for (const auto& [name, flag] :
       {std::pair{"data", "--data"}, std::pair{"tokenizer", "--tokenizer"},
        std::pair{"init", "--init"}, std::pair{"chat-template", "--chat-template"}}) {
    const auto f = st.run.files.find(name);
    if (f == st.run.files.end() || given.has(flag)) continue;
    std::error_code ec;
    if (!std::filesystem::exists(f->second.path, ec))
      throw UsageError("--resume: " + f->second.path.string() + ": missing; if the run's " + flag +
                       " file moved, give its new path with " + flag);
    add(flag, f->second.path.string());
  }
  if (auto f = st.run.settings.find("shuffle"); f != st.run.settings.end())
    add("--shuffle", f->second);
  if (st.shape.packed && !given.has("--pack")) argv.push_back("--pack");
  for (const auto& [key, flag] :
       {std::pair{"lora_rank", "--lora"}, std::pair{"lora_alpha", "--lora-alpha"},
        std::pair{"lora_targets", "--lora-targets"}, std::pair{"weights_dtype", "--weights-dtype"}})
    if (auto f = st.run.settings.find(key); f != st.run.settings.end()) add(flag, f->second);
  // The run's memory cap, unless given anew: a policy the budget chose needs a budget again.
  const auto memory = st.run.settings.find("memory");
  if (!given.has("--arena") && !given.has("--policy") && !given.has("--memory")) {
    if (memory != st.run.settings.end())
      add("--memory", memory->second);
    else if (st.arena_budget)
      add("--arena", std::to_string(*st.arena_budget));
    else
      add("--policy", st.policy.to_string());
  }
  return argv;
}

RunRecord training_run_record(const std::filesystem::path& data,
                              const std::optional<std::string>& tokenizer,
                              const std::optional<std::filesystem::path>& init,
                              const std::string& data_format, const JsonlOptions& jsonl,
                              const Resumed* resumed) {
  // Absolute paths, so that a run resumed from another folder finds its files.
  auto identify = [&](const std::filesystem::path& path, const char* flag) {
    try {
      return identify_file(std::filesystem::absolute(path));
    } catch (const std::invalid_argument& e) {
      if (!resumed) throw;
      throw UsageError(std::string(e.what()) + "; if the run's " + flag +
                       " file moved, give its new path with " + flag);
    }
  };
  RunRecord run;
  run.files["data"] = identify(data, "--data");
  if (tokenizer) run.files["tokenizer"] = identify(*tokenizer, "--tokenizer");
  if (jsonl.chat_template)
    run.files["chat-template"] = identify(*jsonl.chat_template, "--chat-template");
  if (jsonl.shuffle) run.settings["shuffle"] = std::to_string(*jsonl.shuffle);
  if (jsonl.pack) run.settings["pack"] = "first-fit";
  if (init)
    run.files["init"] = identify(*init, "--init");
  else if (resumed && resumed->state.run.files.count("init"))
    run.files["init"] = resumed->state.run.files.at("init");
  run.settings["data_format"] = data_format;
  return run;
}

void record_pack_position(RunRecord& run, const ExampleRows& rows, uint64_t next_row) {
  if (!rows.packed()) return;
  run.settings["pack_next_row"] = std::to_string(next_row);
  run.settings["pack_pass"] = std::to_string(rows.pass_of_row(next_row));
}

void require_pack_position(const Resumed& resumed, uint64_t next_row) {
  const auto f = resumed.state.run.settings.find("pack_next_row");
  if (f == resumed.state.run.settings.end() || f->second == std::to_string(next_row)) return;
  throw UsageError("--resume: the state's run packed up to row " + f->second +
                   ", but its step count reads on from row " + std::to_string(next_row));
}

void record_memory(RunRecord& run, std::optional<uint64_t> memory_bytes) {
  if (memory_bytes) run.settings["memory"] = std::to_string(*memory_bytes);
}

void record_lora(RunRecord& run, const LoraSpec& spec, const ModelConfig& model, DType weights) {
  if (!spec.enabled()) return;
  // Recorded when not f32 only: a state without it (and every older state) stored f32.
  if (weights != DType::f32) run.settings["weights_dtype"] = std::string(dtype_name(weights));
  std::string targets;
  for (const std::string& t : lora_targets(spec, model))
    targets += (targets.empty() ? "" : ",") + t;
  run.settings["lora_rank"] = std::to_string(spec.rank);
  run.settings["lora_alpha"] = number(spec.effective_alpha());
  run.settings["lora_targets"] = targets;
}

void require_same_run(const Resumed& r, const SessionConfig& c, int steps, const RunRecord& run) {
  const TrainingState& st = r.state;
  const std::string where = "--resume " + r.dir.string() + ": ";
  auto differ = [&](const std::string& what, const std::string& ours, const std::string& theirs) {
    throw UsageError(where + what + " " + ours + " differs from the state's " + theirs +
                     "; a resumed run keeps its settings (leave the flag out)");
  };
  if (!(c.model == st.model)) differ("the model", model_text(c.model), model_text(st.model));
  auto same = [&](const char* flag, auto ours, auto theirs) {
    if (ours != theirs) differ(flag, number(double(ours)), number(double(theirs)));
  };
  same("--batch", c.shape.batch, st.shape.batch);
  same("--seq", c.shape.seq, st.shape.seq);
  same("--dropout", c.shape.dropout, st.shape.dropout);
  same("--loss-chunk", c.shape.loss_chunk, st.shape.loss_chunk);
  same("--accum", c.accum, st.accum);
  if (c.shape.activation_dtype != st.shape.activation_dtype)
    differ("--act-dtype", std::string(dtype_name(c.shape.activation_dtype)),
           std::string(dtype_name(st.shape.activation_dtype)));
  if (c.seed != st.seed) differ("--seed", std::to_string(c.seed), std::to_string(st.seed));
  same("--lr", c.optimizer.lr, st.optimizer.lr);
  same("--wd", c.optimizer.weight_decay, st.optimizer.weight_decay);
  same("--beta1", c.optimizer.beta1, st.optimizer.beta1);
  same("--beta2", c.optimizer.beta2, st.optimizer.beta2);
  same("--eps", c.optimizer.eps, st.optimizer.eps);
  same("--grad-clip", c.optimizer.grad_clip, st.optimizer.grad_clip);
  if (c.schedule.decay != st.schedule.decay)
    differ("--lr-schedule", lr_decay_name(c.schedule.decay), lr_decay_name(st.schedule.decay));
  same("--warmup-steps", c.schedule.warmup_steps, st.schedule.warmup_steps);
  same("--min-lr-ratio", c.schedule.min_lr_ratio, st.schedule.min_lr_ratio);
  for (const char* name : {"data", "tokenizer", "chat-template", "init"}) {
    const auto ours = run.files.find(name), theirs = st.run.files.find(name);
    const bool have = ours != run.files.end(), had = theirs != st.run.files.end();
    if (have != had)
      throw UsageError(where + "the state's run " + (had ? "had" : "had no") + " --" + name +
                       (had ? " " + theirs->second.path.string() : std::string()) +
                       "; a resumed run reads the same");
    if (have && !ours->second.same_contents(theirs->second))
      throw UsageError(where + "--" + name + " " + ours->second.path.string() + " (" +
                       std::to_string(ours->second.bytes) + " bytes, fnv1a64w " +
                       hash_hex(ours->second.fnv1a64w) + ") is not the file the run read (" +
                       std::to_string(theirs->second.bytes) + " bytes, fnv1a64w " +
                       hash_hex(theirs->second.fnv1a64w) + ")");
  }
  if (auto f = st.run.settings.find("data_format"); f != st.run.settings.end())
    if (run.settings.at("data_format") != f->second)
      differ("--data-format", run.settings.at("data_format"), f->second);
  const auto shuffle = [](const RunRecord& record) {
    const auto f = record.settings.find("shuffle");
    return f == record.settings.end() ? std::string("none") : f->second;
  };
  if (shuffle(run) != shuffle(st.run)) differ("--shuffle", shuffle(run), shuffle(st.run));
  const auto pack = [](const RunRecord& record) {
    const auto f = record.settings.find("pack");
    return f == record.settings.end() ? std::string("none") : f->second;
  };
  if (pack(run) != pack(st.run)) differ("--pack", pack(run), pack(st.run));
  const auto weights = [](const RunRecord& record) {
    const auto f = record.settings.find("weights_dtype");
    return f == record.settings.end() ? std::string("f32") : f->second;
  };
  if (weights(run) != weights(st.run)) differ("--weights-dtype", weights(run), weights(st.run));
  for (const auto& [key, flag] :
       {std::pair{"lora_rank", "--lora"}, std::pair{"lora_alpha", "--lora-alpha"},
        std::pair{"lora_targets", "--lora-targets"}, std::pair{"objective", "--objective"},
        std::pair{"beta", "--beta"}, std::pair{"label_smoothing", "--label-smoothing"},
        std::pair{"desirable_weight", "--desirable-weight"},
        std::pair{"undesirable_weight", "--undesirable-weight"}}) {
    const auto setting = [&](const RunRecord& record) {
      const auto f = record.settings.find(key);
      return f == record.settings.end() ? std::string("none") : f->second;
    };
    if (setting(run) != setting(st.run)) differ(flag, setting(run), setting(st.run));
  }
  if (steps <= static_cast<int64_t>(st.step))
    throw UsageError(where + "the state is at step " + std::to_string(st.step) +
                     " and --steps is " + std::to_string(steps) +
                     "; give a larger --steps to train further");
}

}  // namespace remat::cli
