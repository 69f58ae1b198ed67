#include "model_args.h"

namespace remat::cli {

std::vector<FlagSpec> model_flags() {
  return {
      {"--model", "NAME", "tiny, gpt2, gpt2-medium, gpt2-large or gpt2-xl; or give it as MODEL",
       "tiny"},
      {"--layers", "N", "transformer blocks", "the model's"},
      {"--dim", "N", "channels", "the model's"},
      {"--heads", "N", "attention heads; must divide --dim", "the model's"},
      {"--vocab", "N", "vocabulary size", "the model's"},
      {"--ctx", "N", "longest sequence: rows of the position embedding", "the model's"},
      {"--batch", "B", "sequences per (micro-)batch", "4"},
      {"--seq", "T", "tokens per sequence, at most --ctx", "--ctx"},
      {"--dropout", "P", "GPT-2 dropout probability in [0, 1)", "0"},
      {"--dtype", "TYPE", "activation storage f32, f16 or bf16; 16-bit is remat plan only", "f32"},
      {"--arena", "SIZE",
       "cap on activation memory, e.g. 48MiB; the planner picks what to recompute", ""},
      {"--policy", "P", "none, every:K, sqrt or selective; --arena picks auto", "none"},
      {"--costs", "FILE.json", "measured kernel costs from remat profile, for the planner", ""},
  };
}

std::vector<FlagSpec> without(std::vector<FlagSpec> flags, const std::string& name) {
  std::erase_if(flags, [&](const FlagSpec& f) { return f.name == name; });
  return flags;
}

ModelSelection parse_model_selection(const Args& a, std::optional<ModelConfig> base) {
  ModelSelection o;
  if (!a.positionals().empty() && a.get("--model"))
    throw UsageError("give the model once, either as MODEL or as --model");
  if (base && (a.get("--model") || !a.positionals().empty()))
    throw UsageError("the model comes from --init; drop the model name");
  if (base) {
    o.model_name = "from checkpoint";
    o.model = *base;
  } else {
    o.model_name = a.positionals().empty() ? a.get_or_default("--model") : a.positionals()[0];
    o.model = ModelConfig::preset(o.model_name);
  }
  const int64_t big = 1 << 30;
  if (auto v = a.get_int("--layers", 1, 100000)) o.model.layers = static_cast<int>(*v);
  if (auto v = a.get_int("--dim", 1, big)) o.model.dim = static_cast<int>(*v);
  if (auto v = a.get_int("--heads", 1, big)) o.model.heads = static_cast<int>(*v);
  if (auto v = a.get_int("--vocab", 1, big)) o.model.vocab = static_cast<int>(*v);
  if (auto v = a.get_int("--ctx", 1, big)) o.model.ctx = static_cast<int>(*v);
  o.model.validate();
  if (!base) o.model_name = o.model.name();
  o.shape.batch = static_cast<int>(a.get_int_or_default("--batch", 1, big));
  o.shape.seq = static_cast<int>(a.get_int("--seq", 1, big).value_or(o.model.ctx));
  o.shape.dropout = static_cast<float>(a.get_double_or_default("--dropout"));
  o.shape.activation_dtype = parse_activation_dtype(a.get_or_default("--dtype"));
  o.shape.validate(o.model);
  if (a.get("--arena") && a.get("--policy"))
    throw UsageError("give either --arena (auto picks the policy) or --policy, not both");
  o.arena = a.get_size("--arena");
  o.policy =
      o.arena ? Policy{Policy::Kind::automatic, 0} : Policy::parse(a.get_or_default("--policy"));
  if (o.policy.kind == Policy::Kind::automatic && !o.arena)
    throw UsageError("--policy auto needs a budget: use --arena SIZE instead");
  if (auto f = a.get("--costs")) {
    try {
      o.costs = CostModel::load(*f);
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      if (what.find(*f) != std::string::npos) throw;
      throw UsageError("--costs " + *f + ": " + what +
                       "; give a cost table written by 'remat profile'");
    }
  }
  return o;
}

std::vector<FlagSpec> lora_flags() {
  return {
      {"--lora", "R", "train rank-R LoRA adapters on a frozen model (PEFT's layout)", ""},
      {"--lora-alpha", "A", "LoRA alpha; the adapters are scaled by A/R", "2R"},
      {"--lora-targets", "LIST",
       "comma-separated module names matched against the end of each weight's path",
       "attn.c_attn,attn.c_proj,mlp.c_fc,mlp.c_proj"},
  };
}

LoraSpec parse_lora_flags(const Args& a, bool rank_elsewhere) {
  LoraSpec l;
  if (auto r = a.get_int("--lora", 1, 1 << 20)) l.rank = static_cast<int>(*r);
  if (!l.enabled() && !rank_elsewhere && (a.has("--lora-alpha") || a.has("--lora-targets")))
    throw UsageError("--lora-alpha and --lora-targets need --lora R");
  if (auto v = a.get_double("--lora-alpha")) {
    if (!(*v > 0)) throw UsageError("--lora-alpha must be positive");
    l.alpha = *v;
  }
  if (auto t = a.get("--lora-targets")) {
    try {
      l.targets = parse_lora_targets(*t);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--lora-targets: ") + e.what());
    }
  }
  return l;
}

void require_f32_activations(const ModelSelection& sel) {
  const DType d = sel.shape.activation_dtype;
  if (d == DType::f32) return;
  const std::string name(dtype_name(d));
  throw UsageError("--dtype " + name +
                   ": 16-bit activation storage is not implemented yet; train and bench run f32 "
                   "(remat plan can plan " +
                   name + ")");
}

}  // namespace remat::cli
