// LoRA (Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", 2021) as a transform of
// the forward graph: every matmul whose weight is named by a target gets a trained low-rank
// branch, y = x·W (+b) + scale·(x·Aᵀ)·Bᵀ with A [R, in] and B [out, R] in PEFT's layout, and
// every parameter the model had is frozen. Generic over models: targets are matched by weight
// name as PEFT's target_modules are, whatever layout the weight has.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/model_config.h"

namespace remat {

struct LoraSpec {
  int rank = 0;                      // R; 0 turns LoRA off
  double alpha = 0;                  // lora_alpha; 0 means PEFT's usual 2R
  std::vector<std::string> targets;  // module-name suffixes; empty: the model's defaults
  bool enabled() const { return rank > 0; }
  double effective_alpha() const { return alpha > 0 ? alpha : 2.0 * rank; }
  float scale() const { return static_cast<float>(effective_alpha() / rank); }
};

// The model's default targets: every linear layer of a block. GPT-2's attn.c_attn, attn.c_proj,
// mlp.c_fc, mlp.c_proj; the Llama family's q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
// down_proj; Qwen3.5's those (its gated attention layers and MLPs) and its Gated DeltaNet
// projections in_proj_qkv, in_proj_z and out_proj. Its in_proj_a and in_proj_b ([value heads,
// C], 16 rows in Qwen3.5-0.8B and -2B) are not defaults: a rank-R pair on them trains R·(C + 16)
// values where the matrix has 16·C, and they only feed the decay and write gates; PEFT and
// llama.cpp adapt them when named (--lora-targets). A Qwen3.5 model without a full-attention
// layer (or without a linear one) has no defaults of that kind. Every caller passes the model,
// not only its architecture, so that a Qwen3.5 session, its adapter files and its plans agree.
std::vector<std::string> default_lora_targets(const ModelConfig& model);
// The targets `spec` names (its own list, else the model's defaults).
std::vector<std::string> lora_targets(const LoraSpec& spec, const ModelConfig& model);

// PEFT's rule for a list of target_modules: the module path equals a target or ends with
// "." + target ("c_proj" names attn.c_proj and mlp.c_proj, "attn.c_proj" only the first).
bool lora_target_matches(std::string_view module, const std::vector<std::string>& targets);

// "a,b,c" -> {"a", "b", "c"}; empty items or characters outside [A-Za-z0-9_.] are
// std::invalid_argument.
std::vector<std::string> parse_lora_targets(std::string_view list);

// Applies the spec to a forward graph (before autodiff; spec.targets must be given, see
// lora_targets): moves Graph::parameters to Graph::frozen,
// adds A and B of each targeted matmul (in forward order) as the new Graph::parameters and records
// them in Graph::adapters. A rank below 1, a non-positive alpha, or a target that names no matmul
// weight is std::invalid_argument (the message lists the modules there are).
void apply_lora(Graph& forward_graph, const LoraSpec& spec);

}  // namespace remat
