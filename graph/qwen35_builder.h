// Builds the forward graph of Qwen3.5's text model (ModelConfig::qwen35; transformers'
// Qwen3_5ForCausalLM without its MTP layers) as a chain of blocks, with Hugging Face's parameter
// names (model.layers.{i}.linear_attn.in_proj_qkv.weight, ...self_attn.q_proj.weight, ...):
//   token embedding -> decoder layers -> final (1 + w) RMSNorm + head + cross-entropy.
// Each layer: h = x + mixer(input_layernorm(x)), y = h + mlp(post_attention_layernorm(h)), both
// norms (1 + w), the MLP SwiGLU as Llama's. The mixer of a Gated DeltaNet layer
// (Qwen3_5GatedDeltaNet):
//   qkv = in_proj_qkv(n), z = in_proj_z(n), a = in_proj_a(n), b = in_proj_b(n)
//   c = silu(causal_conv1d(qkv)); q = l2norm(c[q])/sqrt(dk), k = l2norm(c[k]), v = c[v] in place
//   g, beta = gdn_gates(a, b, A_log, dt_bias); o = gated_delta_rule(q, k, v, g, beta)
//   out_proj(gated_rmsnorm(o, z, norm.weight))
// with, when TrainShape::delta_chunk cuts T into chunks, the chunk-start states computed first
// (gated_delta_state) as an activation of the block. The mixer of a gated attention layer
// (Qwen3_5Attention): q_proj gives per head D query floats then D gate floats; q (read in place)
// and k get a per-head (1 + w) RMSNorm, partial RoPE (ModelConfig::rotary_dims), GQA attention,
// then attention * sigmoid(gate) (the gate read in place) and o_proj.
#pragma once

#include "graph/graph.h"
#include "graph/model_config.h"

namespace remat {

// Validates config and shape (std::invalid_argument) and builds the forward graph; run
// autodiff() for the training graph.
Graph build_qwen35(const ModelConfig& config, const TrainShape& shape);

}  // namespace remat
