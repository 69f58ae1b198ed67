// Ops of the training graph. Kinds match the kernel set one to one (docs/ops.md); the attributes
// are everything a kernel needs besides its tensors, so the runtime never has to decide anything.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "graph/rope_scaling.h"
#include "graph/tensor.h"

namespace remat {

enum class OpKind {
  embedding,
  embedding_backward,
  layernorm,
  layernorm_backward,
  matmul,
  matmul_backward,
  attention,
  attention_backward,
  gelu,
  gelu_backward,
  residual,
  residual_backward,
  dropout,
  dropout_backward,
  cross_entropy,
  cross_entropy_backward,
  token_embedding,
  token_embedding_backward,
  rmsnorm,
  rmsnorm_backward,
  rope,
  rope_backward,
  gqa_attention,
  gqa_attention_backward,
  swiglu,
  swiglu_backward,
  head_loss,
  head_loss_backward,
  grad_norm,
  adamw,
  // Qwen3.5's Gated DeltaNet and gated attention (docs/ops.md, docs/DESIGN.md).
  causal_conv1d,
  causal_conv1d_backward,
  l2norm,
  l2norm_backward,
  gdn_gates,
  gdn_gates_backward,
  gated_rmsnorm,
  gated_rmsnorm_backward,
  sigmoid_gate,
  sigmoid_gate_backward,
  gated_delta_state,  // chunk-start states: a checkpoint of gated_delta_rule, no backward of its
                      // own
  gated_delta_rule,
  gated_delta_rule_backward,
};

std::string_view op_kind_name(OpKind k);
// Parses the names above; returns false for an unknown name.
bool parse_op_kind(std::string_view name, OpKind* out);
bool is_backward_kind(OpKind k);

// Weight layout of a matmul: HF Conv1D stores [in, out]; the tied head reads wte as [out, in].
enum class WeightLayout { in_out, out_in };

// Everything an op needs besides its tensors. Fields unused by a kind keep their defaults.
struct OpAttrs {
  WeightLayout w_layout = WeightLayout::in_out;  // matmul / matmul_backward
  bool has_bias = false;                         // matmul / matmul_backward: bias input present
  bool adds_residual = false;  // matmul: y = residual + x·W (+ bias) (graph/residual_fusion.h)
  bool frozen = false;  // matmul_backward / layernorm_backward / rmsnorm_backward: the weight (and
                        // bias) is frozen, so the op writes dx only and reads nothing only
                        // dweight needs
  float scale = 1.0f;   // residual / residual_backward: y = a + scale·b (LoRA's alpha / r);
                        // token_embedding(_backward): x = scale·wte[token] (Gemma: sqrt(C))
  int heads = 0;        // (gqa_)attention, rope and their backwards: query heads, or rope's heads
  int kv_heads = 0;     // gqa_attention / gqa_attention_backward: key/value heads (divide heads)
  int window = 0;  // (gqa_)attention and backward: sliding window, query t sees keys t - window + 1
                   // .. t (window keys, itself included; transformers' sliding_window); 0: all
  float attn_scale = 0.0f;      // (gqa_)attention and backward: score scale; 0: 1/sqrt(head size)
  float rope_theta = 10000.0f;  // rope / rope_backward: the RoPE base
  Llama3Scaling rope_llama3;    // rope / rope_backward: frequency scaling (all zero: none)
  int rotary_dims = 0;          // rope / rope_backward: the first R of D turn (partial); 0: all
  float dropout_p = 0.0f;       // dropout / dropout_backward
  uint32_t dropout_id = 0;      // RNG stream id: the same for an op, its recompute and its backward
  float eps = 1e-5f;            // layernorm / rmsnorm epsilon
  bool norm_offset = false;     // rmsnorm / rmsnorm_backward: the gain is 1 + weight (Gemma)
  bool gelu_gate = false;  // swiglu / swiglu_backward: gate activation GELU (tanh), GeGLU (Gemma)
  bool weight_decay = false;  // adamw: decay this parameter (2-D tensors only, PyTorch style)
  int chunk_rows = 0;         // head_loss(_backward): rows of logits that exist at a time
  bool packed = false;  // embedding, rope, (gqa_)attention and their backwards: rows hold several
                        // examples, and the graph's `positions` input (position of each token
                        // in its example) is the op's last input (graph/packing.h)
  // l2norm, sigmoid_gate, rmsnorm, gated_delta_*: an input read in place from a wider tensor
  // starts this many floats into each of its rows (docs/ops.md says per kind which input and which
  // rows); its gradient is written at the same places only.
  int slice_offset = 0;
  // gated_delta_*: tokens per recurrence chunk; the states at chunk starts are a tensor of their
  // own (docs/DESIGN.md, 'The delta rule under the planner'). 0: one chunk, no state tensor.
  int chunk_len = 0;
  std::vector<uint8_t> accumulate;  // per output: 1 = add into it (+=), 0 = overwrite (=)
  bool operator==(const OpAttrs&) const = default;
};

struct Op {
  OpKind kind = OpKind::embedding;  // which kernel family
  std::vector<TensorId> inputs;     // in the order docs/ops.md lists them
  std::vector<TensorId> outputs;    // in the order docs/ops.md lists them
  OpAttrs attrs;                    // kernel parameters, accumulate flags
  int block = -1;                   // chain block (-1: optimizer)
  int forward_op = -1;              // backward ops: index of the forward op they differentiate
  double flops = 0;                 // floating-point operations (multiply-add = 2)
  double bytes = 0;                 // bytes read plus bytes written
};

}  // namespace remat
