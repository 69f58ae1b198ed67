// Builds the forward graph of a Llama-family model (Llama, SmolLM2, Qwen2, Qwen3) as a chain of
// blocks:
// token embedding -> decoder layers -> final RMSNorm + head + cross-entropy, with Hugging Face's
// parameter names (model.embed_tokens.weight, model.layers.{i}.self_attn.q_proj.weight, ...,
// model.norm.weight, lm_head.weight when the head is not tied).
//
// One decoder layer (LlamaDecoderLayer):
//   h = x + o_proj(attention(rope(q_proj(n)), rope(k_proj(n)), v_proj(n))),  n = rmsnorm1(x)
//   y = h + down_proj(silu(gate_proj(m)) * up_proj(m)),                      m = rmsnorm2(h)
// q, k, v, gate and up are separate matmuls with separate weights ([out, in], nn.Linear), so each
// can be addressed by name; q/k/v have biases when the config says so (Qwen2), nothing else does.
// Qwen3 (ModelConfig::qk_norm) normalises each head of q and of k (self_attn.q_norm, k_norm:
// RMSNorm with a [D] gain, eps rms_norm_eps) after the projections and before RoPE, and its head
// size D is explicit, so heads·D need not equal the width C. RoPE's frequencies carry the
// config's llama3 scaling (graph/rope_scaling.h) when it has one.
// Gemma 3 (ModelConfig::gemma3) on the same chain: the embedding times sqrt(C), every RMSNorm's
// gain 1 + weight, q/k norms, a local layer's sliding window and RoPE base, the score scale
// query_pre_attn_scalar^-1/2, GeGLU (the swiglu op with gelu_gate), and per layer
//   h = x + post_attention_layernorm(attention(input_layernorm(x)))
//   y = h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h))).
// q, k, v and the attention output are [B, T, heads·D] activations; the rest are [B·T, width].
#pragma once

#include "graph/graph.h"
#include "graph/model_config.h"

namespace remat {

// Validates config and shape (std::invalid_argument; the family has no dropout) and builds the
// forward graph; run autodiff() for the training graph.
Graph build_llama(const ModelConfig& config, const TrainShape& shape);

}  // namespace remat
