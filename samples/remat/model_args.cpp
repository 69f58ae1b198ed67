#include "model_args.h"

#include "device_args.h"
#include "formats/base_blocks.h"
#include "graph/model_builder.h"
#include "graph/weight_dtype.h"
#include "planner/session_plan.h"

namespace remat::cli {

std::vector<FlagSpec> model_flags() {
  return {
      {"--model", "NAME",
       "tiny, gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-tiny, smollm2-135m, smollm2-360m, "
       "qwen2.5-0.5b, llama3.2-1b, llama3.2-3b, qwen3-0.6b, qwen3-1.7b, gemma3-270m or gemma3-1b; "
       "or give it as MODEL (also qwen3.5-0.8b, qwen3.5-2b and qwen3.5-tiny)",
       "tiny"},
      {"--layers", "N", "transformer blocks", "the model's"},
      {"--dim", "N", "channels", "the model's"},
      {"--heads", "N", "attention heads; must divide --dim", "the model's"},
      {"--kv-heads", "N", "Llama family: key/value heads; must divide --heads", "the model's"},
      {"--ffn", "N", "Llama family: MLP width (intermediate_size)", "the model's"},
      {"--rope-theta", "X", "Llama family: RoPE base (rope_theta)", "the model's"},
      {"--norm-eps", "X", "Llama family: RMSNorm epsilon (rms_norm_eps)", "the model's"},
      {"--tied-head", "yes|no", "Llama family: the head shares the token embedding", "the model's"},
      {"--qkv-bias", "yes|no", "Llama family: q/k/v projections have biases (Qwen2)",
       "the model's"},
      {"--vocab", "N", "vocabulary size", "the model's"},
      {"--ctx", "N", "longest sequence: rows of the position embedding", "the model's"},
      {"--batch", "B", "sequences per (micro-)batch", "4"},
      {"--seq", "T", "tokens per sequence, at most --ctx", "--ctx"},
      {"--dropout", "P", "GPT-2 dropout probability in [0, 1)", "0"},
      {"--loss-chunk", "ROWS",
       "rows of logits the LM head holds at a time: 0 keeps all B*T rows, else a multiple of "
       "64; auto the whole logits where they fit (one storage-buffer binding of the device, and "
       "--arena or --memory when given), else the largest chunk that does",
       "auto"},
      {"--act-dtype", "TYPE",
       "activation storage f32, f16 or bf16 (rounded when written; compute, gradients and "
       "weights stay f32)",
       "f32"},
      {"--dtype", "TYPE", "the same as --act-dtype", "f32"},
      {"--weights-dtype", "TYPE",
       "storage of the frozen weights under --lora: f32, f16 or bf16 (1-D gains and biases stay "
       "f32)",
       "f32"},
      {"--base-blocks", "yes|no",
       "with --lora on a quantized .gguf --init: keep its quantized matrices in their ggml "
       "blocks on the device, read by the matmuls (no: decode them to --weights-dtype)",
       "yes"},
      {"--arena", "SIZE",
       "cap on activation memory, e.g. 48MiB; the planner picks what to recompute", ""},
      {"--memory", "SIZE",
       "cap on the session's whole device memory (weights, gradients, AdamW moments, "
       "activations, buffers); activations and the loss chunk are planned into what the model "
       "leaves",
       ""},
      {"--policy", "P", "none, every:K, sqrt or selective; --arena picks auto", "none"},
      {"--costs", "FILE.json", "measured kernel costs from remat profile, for the planner", ""},
      device_profile_flag(),
  };
}

std::vector<FlagSpec> without(std::vector<FlagSpec> flags, const std::string& name) {
  std::erase_if(flags, [&](const FlagSpec& f) { return f.name == name; });
  return flags;
}

namespace {

bool yes_no(const std::string& v, const char* flag) {
  if (v == "yes") return true;
  if (v == "no") return false;
  throw UsageError(std::string(flag) + " takes yes or no, not '" + v + "'");
}

}  // namespace

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
  if (auto v = a.get_int("--kv-heads", 1, big)) o.model.kv_heads = static_cast<int>(*v);
  if (auto v = a.get_int("--ffn", 1, big)) o.model.ffn = static_cast<int>(*v);
  if (auto v = a.get_double("--rope-theta")) o.model.rope_theta = static_cast<float>(*v);
  if (auto v = a.get_double("--norm-eps")) o.model.norm_eps = static_cast<float>(*v);
  if (auto v = a.get("--tied-head")) o.model.tied_head = yes_no(*v, "--tied-head");
  if (auto v = a.get("--qkv-bias")) o.model.qkv_bias = yes_no(*v, "--qkv-bias");
  for (const char* flag :
       {"--kv-heads", "--ffn", "--rope-theta", "--norm-eps", "--tied-head", "--qkv-bias"})
    if (o.model.arch != Architecture::llama && a.has(flag))
      throw UsageError(std::string(flag) + " is for Llama-family models");
  if (auto v = a.get_int("--vocab", 1, big)) o.model.vocab = static_cast<int>(*v);
  if (auto v = a.get_int("--ctx", 1, big)) o.model.ctx = static_cast<int>(*v);
  o.model.validate();
  if (!base) o.model_name = o.model.name();
  o.shape.batch = static_cast<int>(a.get_int_or_default("--batch", 1, big));
  o.shape.seq = static_cast<int>(a.get_int("--seq", 1, big).value_or(o.model.ctx));
  o.shape.dropout = static_cast<float>(a.get_double_or_default("--dropout"));
  if (a.get("--act-dtype") && a.get("--dtype"))
    throw UsageError("give --act-dtype once (--dtype is the same flag)");
  o.shape.activation_dtype = parse_activation_dtype(
      a.get("--dtype") ? *a.get("--dtype") : a.get_or_default("--act-dtype"));
  try {
    o.shape.weight_dtype = parse_weight_dtype(a.get_or_default("--weights-dtype"));
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--weights-dtype: ") + e.what());
  }
  const bool auto_chunk = a.get("--loss-chunk") == "auto";
  if (!auto_chunk)
    o.shape.loss_chunk = static_cast<int>(a.get_int("--loss-chunk", 0, big).value_or(0));
  o.shape.validate(o.model);
  if (a.get("--arena") && a.get("--policy"))
    throw UsageError("give either --arena (auto picks the policy) or --policy, not both");
  o.arena = a.get_size("--arena");
  o.memory = a.get_size("--memory");
  o.device_profile = device_profile_arg(a);
  const bool budget = o.arena || (o.memory && !a.get("--policy"));
  o.policy =
      budget ? Policy{Policy::Kind::automatic, 0} : Policy::parse(a.get_or_default("--policy"));
  if (o.policy.kind == Policy::Kind::automatic && !o.arena && !o.memory)
    throw UsageError("--policy auto needs a budget: use --arena SIZE or --memory SIZE instead");
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
  // Unless given, the planner chooses the chunk (planner/session_plan.h).
  o.choose_loss_chunk = auto_chunk || !a.has("--loss-chunk");
  return o;
}

void resolve_loss_chunk(ModelSelection& sel, const LoraSpec& lora, uint64_t alignment,
                        uint64_t max_binding_bytes) {
  if (!sel.choose_loss_chunk || sel.memory) return;
  sel.shape.loss_chunk = session_loss_chunk(sel.model, sel.shape, lora,
                                            {sel.policy, sel.arena, sel.memory, true, alignment,
                                             max_binding_bytes, sel.costs ? &*sel.costs : nullptr});
  sel.choose_loss_chunk = false;
}

std::vector<FlagSpec> lora_flags() {
  return {
      {"--lora", "R", "train rank-R LoRA adapters on a frozen model (PEFT's layout)", ""},
      {"--lora-alpha", "A", "LoRA alpha; the adapters are scaled by A/R", "2R"},
      {"--lora-targets", "LIST",
       "comma-separated module names matched against the end of each weight's path",
       "the model's projections (docs/cli.md)"},
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

std::string model_shape_text(const ModelConfig& m) {
  std::string s = "L" + std::to_string(m.layers) + " C" + std::to_string(m.dim) + " H" +
                  std::to_string(m.heads) + " V" + std::to_string(m.vocab) + " ctx" +
                  std::to_string(m.ctx);
  if (m.arch == Architecture::llama)
    s += " KV" + std::to_string(m.kv_head_count()) + " FFN" + std::to_string(m.mlp_width()) +
         (m.tied_head ? " tied" : " untied") +
         (m.head_size ? " head_dim" + std::to_string(m.head_size) : "") +
         (m.qk_norm ? " qk-norm" : "") +
         (m.rope_scaling == RopeScaling::llama3 ? " llama3-rope" : "") +
         (m.gemma3 ? " gemma3 window" + std::to_string(m.gemma.sliding_window) + " global-every" +
                         std::to_string(m.gemma.pattern) +
                         (m.gemma.rope_linear != 0.0f ? " linear-rope" : "")
                   : "");
  return s;
}

void keep_base_blocks(ModelSelection& sel, const Args& a,
                      const std::optional<std::filesystem::path>& init, const LoraSpec& lora) {
  const bool keep = yes_no(a.get_or_default("--base-blocks"), "--base-blocks");
  BaseBlocks choice = BaseBlocks::automatic;
  if (a.has("--base-blocks")) {
    if (!base_blocks_apply(init, lora))
      throw UsageError("--base-blocks is for --lora on a .gguf --init");
    choice = keep ? BaseBlocks::keep : BaseBlocks::decode;
  }
  sel.shape.block_weights = base_block_weights(init, lora, choice);
}

}  // namespace remat::cli
