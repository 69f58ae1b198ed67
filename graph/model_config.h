// The model's shape (GPT-2 or Llama family) and one training step's shape, with the validation a
// user gets back as a one-line std::invalid_argument.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/rope_scaling.h"
#include "graph/tensor.h"

namespace remat {

// Which block structure the graph builder emits.
//   gpt2:  learned positions, LayerNorm with bias, fused c_attn (Conv1D [in,out]), GELU MLP,
//          biases everywhere, head tied to wte.
//   llama: no position table (RoPE on q and k), RMSNorm (weight only), separate q/k/v/o
//          projections in nn.Linear layout [out,in] with optional q/k/v biases (Qwen2),
//          grouped-query attention, SwiGLU MLP (gate, up, down), tied or untied head;
//          optionally (Qwen3) an RMSNorm over each head of q and of k before RoPE; Gemma 3
//          (ModelConfig::gemma3) on the same chain, see Gemma3Layers; Qwen3.5
//          (ModelConfig::qwen35) too, see Qwen35Layers.
enum class Architecture { gpt2, llama };
std::string_view architecture_name(Architecture a);

// RoPE frequency scaling a checkpoint asks for: none, or Llama 3.1+'s `llama3`
// (graph/rope_scaling.h).
enum class RopeScaling { none, llama3 };

// Gemma 3's text model (model_type gemma3_text) as it differs from the Llama family: embedding
// scaled by sqrt(width), RMSNorm gains stored as offsets from 1, a norm after attention and after
// the MLP besides the two before them, q/k norms, GeGLU, and local layers (sliding-window
// attention, their own RoPE base) between global ones.
struct Gemma3Layers {
  int sliding_window = 0;         // local layers' window: query t sees keys t - window + 1 .. t
  int pattern = 0;                // layer i is global iff (i + 1) % pattern == 0
  float local_rope_theta = 0.0f;  // RoPE base of local layers (rope_local_base_freq)
  float query_scalar = 0.0f;      // scores are scaled by query_pre_attn_scalar^-1/2
  float rope_linear = 0.0f;       // global layers' rope_scaling `linear` factor; 0: none
  bool operator==(const Gemma3Layers&) const = default;
};

// Qwen3.5's text model (transformers' model_type qwen3_5_text, the text_config of a qwen3_5
// checkpoint; llama.cpp's arch qwen35) as it differs from the Llama family. Three of every four
// layers are Gated DeltaNet linear attention (Yang et al. 2024, "Gated Delta Networks"), every
// `full_attention_interval`-th layer gated full attention. The family implies, with no field of
// its own (transformers' Qwen3_5 classes have no switch for them):
//   - every RMSNorm gain is stored zero-centred, applied as (1 + w) (Qwen3NextRMSNorm), except
//     the linear layers' gated norm norm(o) * w * silu(z), whose w is the gain itself
//     (Qwen3NextRMSNormGated);
//   - full attention's q_proj yields, per query head, head_dim rows of q then head_dim rows of
//     an output gate; the attention output is multiplied by sigmoid(gate) before o_proj
//     (Qwen3NextAttention; config.json's attn_output_gate, which must be true);
//   - q and k get a per-head RMSNorm (qk_norm) and RoPE rotates only the first rotary_dims() of
//     each head's channels (partial_rotary_factor), in Hugging Face's half-split pairing.
// A linear layer holds linear_key_heads key heads of linear_key_head_dim and linear_value_heads
// value heads of linear_value_head_dim; value head j reads key head j / (value / key heads)
// (transformers' repeat_interleave: consecutive value heads share a key head).
struct Qwen35Layers {
  int full_attention_interval = 0;  // layer i is full attention iff (i + 1) % interval == 0
  int linear_key_heads = 0;         // linear_num_key_heads
  int linear_value_heads = 0;       // linear_num_value_heads, a multiple of the key heads
  int linear_key_head_dim = 0;      // linear_key_head_dim (also the state's rows)
  int linear_value_head_dim = 0;    // linear_value_head_dim (the state's columns)
  int conv_kernel = 0;              // linear_conv_kernel_dim: causal depthwise conv1d taps
  float partial_rotary = 0.0f;      // partial_rotary_factor: share of head_dim RoPE rotates
  // Multi-token-prediction layers the checkpoint carries (mtp_num_hidden_layers, tensors mtp.*).
  // remat trains and counts none of them; it keeps the number so a saved config says the same.
  int mtp_layers = 0;
  // rope_parameters' mrope_section and mrope_interleaved: how a multimodal position (temporal,
  // height, width) splits the rotary frequencies. Text alone gives a token the same three
  // positions, so any split computes plain partial RoPE (formats/hf_rope.h); remat keeps them
  // so that a saved config and a GGUF file's rope.dimension_sections say what was read.
  std::array<int, 3> mrope_section{};
  bool mrope_interleaved = false;
  bool operator==(const Qwen35Layers&) const = default;
};

// Which transformers' keys a Hugging Face config.json spelled the model with
// (formats/hf_config.h): transformers 4's rope_theta, rope_scaling and torch_dtype (Gemma 3:
// rope_local_base_freq), or transformers 5's rope_parameters and dtype. A folder is saved in the
// spelling it was read in. The spelling is no part of the model: a transformers 5 folder and its
// transformers 4 twin build the same graph, so any two spellings compare equal.
enum class HfKeys { transformers4, transformers5 };
struct HfSpelling {
  HfKeys keys = HfKeys::transformers4;
  bool operator==(const HfSpelling&) const { return true; }
};

struct ModelConfig {
  int layers = 4;   // transformer blocks L
  int dim = 128;    // channels C (the textbook's H)
  int heads = 4;    // attention (query) heads NH; must divide dim
  int vocab = 256;  // vocabulary V
  int ctx = 64;     // maximum sequence length (gpt2: rows of wpe; llama: max_position_embeddings)

  Architecture arch = Architecture::gpt2;
  // The fields below matter for llama only; gpt2 keeps their defaults (its MLP is 4*dim wide,
  // LayerNorm eps 1e-5, head tied, biases everywhere).
  int kv_heads = 0;             // key/value heads (num_key_value_heads); divides heads; 0 = heads
  int ffn = 0;                  // MLP width (intermediate_size); 0 = 4*dim
  float rope_theta = 10000.0f;  // RoPE base
  float norm_eps = 1e-5f;       // RMSNorm eps (rms_norm_eps); GPT-2's LayerNorm uses 1e-5
  bool tied_head = true;        // lm_head shares the token embedding (tie_word_embeddings)
  bool qkv_bias = false;        // q/k/v projections have biases (attention_bias, Qwen2)
  RopeScaling rope_scaling = RopeScaling::none;
  Llama3Scaling llama3;  // rope_scaling == llama3 only; zeros otherwise
  int head_size = 0;     // head_dim when given explicitly (Qwen3); 0 = dim / heads
  bool qk_norm = false;  // RMSNorm over each head of q and k before RoPE (Qwen3's q_norm, k_norm)
  bool gemma3 = false;   // Gemma 3's layers (Gemma3Layers); needs qk_norm and a tied head
  Gemma3Layers gemma;    // gemma3 only; zeros otherwise
  bool qwen35 = false;   // Qwen3.5's layers (Qwen35Layers); needs qk_norm
  Qwen35Layers qwen35_layers;  // qwen35 only; zeros otherwise

  // How config.json spelled the model; transformers 4's (today's) when no folder is behind it.
  HfSpelling config_keys;

  // "tiny", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "llama-tiny", "smollm2-135m",
  // "smollm2-360m", "qwen2.5-0.5b", "llama3.2-1b", "llama3.2-3b", "qwen3-0.6b", "qwen3-1.7b",
  // "gemma3-270m", "gemma3-1b", "qwen3.5-0.8b", "qwen3.5-2b", "qwen3.5-tiny"; unknown names are
  // invalid_argument.
  static ModelConfig preset(std::string_view name);
  static const std::vector<std::string_view>& preset_names();
  // Throws invalid_argument naming the bad field and what would be right.
  void validate() const;
  uint64_t parameter_count() const;
  // The preset this shape equals, or "custom".
  std::string_view name() const;

  int kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  int head_dim() const { return head_size > 0 ? head_size : dim / heads; }
  int mlp_width() const { return ffn > 0 ? ffn : 4 * dim; }
  // Gemma 3: whether layer i attends to all keys with the global RoPE base (else: local).
  bool global_layer(int i) const { return !gemma3 || (i + 1) % gemma.pattern == 0; }
  // Qwen3.5: whether layer i is Gated DeltaNet linear attention (else: gated full attention).
  bool linear_attention_layer(int i) const {
    return qwen35 && (i + 1) % qwen35_layers.full_attention_interval != 0;
  }
  // Channels of each head RoPE rotates: head_dim() but for Qwen3.5's partial rotary factor,
  // int(head_dim * factor) as transformers computes it (Qwen3_5TextRotaryEmbedding).
  int rotary_dims() const;
  bool operator==(const ModelConfig&) const = default;

 private:
  void validate_llama3() const;
  void validate_gemma3() const;
  void validate_qwen35() const;
  uint64_t qwen35_parameter_count() const;
};

// Loss chunks start on row multiples of this, so every chunk's rows of x, targets and losses
// begin on a 256-byte boundary (the largest minStorageBufferOffsetAlignment Vulkan permits).
inline constexpr int kLossChunkAlign = 64;

// A frozen weight kept on the device in its file's block type (QLoRA, graph/weight_dtype.h).
struct BlockWeight {
  std::string name;  // the parameter's name (Hugging Face's)
  BlockFormat format;
};

struct TrainShape {
  int batch = 4;                        // B
  int seq = 64;                         // T, at most ctx
  float dropout = 0.0f;                 // GPT-2 dropout probability; 0 omits the dropout ops
  DType activation_dtype = DType::f32;  // storage of activations; their gradients stay f32
  // Rows of logits the LM head materialises at a time (graph/lm_head.h): 0 keeps the whole
  // [B·T, V] logits (sampling reads them); otherwise a multiple of kLossChunkAlign, or at least
  // B·T (one chunk).
  int loss_chunk = 0;
  // Storage of frozen weights of two or more dimensions (f16/bf16 only with LoRA;
  // graph/weight_dtype.h). Trained parameters, gradients and moments are always f32.
  DType weight_dtype = DType::f32;
  // Frozen weights kept in ggml block types instead (LoRA on a quantized GGUF base): each named
  // weight a matmul alone reads is stored as its blocks; the others keep weight_dtype.
  std::vector<BlockWeight> block_weights;
  // Rows hold several examples (formats/example_rows.h): the graph gains a `positions` input
  // [B,T] u32, each token's position in its example. Attention is block-diagonal within a row,
  // and RoPE and GPT-2's learned positions read those positions (graph/op_schema.h, if_packed).
  bool packed = false;
  // A residual that adds a matmul's output becomes part of the matmul (graph/residual_fusion.h):
  // the same bits, one pass and one tensor fewer. Off only to compare against the unfused graph.
  bool fuse_residuals = true;
  // Qwen3.5: tokens per chunk of the Gated DeltaNet recurrence. The states at chunk starts are
  // an activation the planner keeps or recomputes; the backward's workspace holds one chunk's
  // states (docs/DESIGN.md, 'The delta rule under the planner'). 0 or at least T: one chunk; else
  // a multiple of 64 (graph/delta_rule_workspace.h). The results are the same bits for every value.
  int delta_chunk = 0;
  // The loss backward scales each row (token position) by its own factor, read at run time,
  // instead of one factor for all: a preference objective's per-row coefficients
  // (graph/preference_loss.h). The session then holds B·T more host-visible floats
  // (planner/session_extras.h); the graph and the plan's steps are unchanged.
  bool row_loss_scales = false;

  // Throws invalid_argument (positive sizes, seq <= ctx, 0 <= dropout < 1, delta_chunk 0 or a
  // multiple of 64 for Qwen3.5; the Llama family has no dropout, so dropout must be 0 there).
  void validate(const ModelConfig& model) const;
};

}  // namespace remat
