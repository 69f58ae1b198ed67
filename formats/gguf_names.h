// Tensor names and layouts between remat's parameters (Hugging Face names and shapes) and the
// GGUF files llama.cpp's converter writes, for the architectures remat trains: `llama` (Llama,
// SmolLM2), `qwen2`, `qwen3` (q/k norms: blk.N.attn_q_norm, attn_k_norm), `gemma3` (besides
// those, blk.N.post_attention_norm, ffn_norm for pre_feedforward_layernorm, post_ffw_norm) and
// `gpt2`. Names follow llama.cpp's gguf-py tensor map (token_embd, blk.N.attn_q, ..., output);
// layouts its converter's choices:
//   - gpt2's Conv1D weights ([in, out] in Hugging Face files) are stored transposed, as [out, in]
//     rows like every other matrix in GGUF;
//   - `llama` files store the rows of attn_q and attn_k permuted for llama.cpp's RoPE, which
//     rotates adjacent pairs (2i, 2i+1) where Hugging Face's rotates (i, i + d/2): within each
//     head of d rows, Hugging Face row t·d/2 + i is GGUF row 2i + t (t in {0, 1}). `qwen2` and
//     `qwen3` files keep Hugging Face's order (llama.cpp rotates them the Hugging Face way), and
//     so do `gemma3` files;
//   - `gemma3` files hold every RMSNorm weight (the four per block, q/k norms, the final norm)
//     as the gain 1 + w, where Hugging Face's Gemma3RMSNorm keeps w (GgufLayout::norm_shift).
// Row permutations move whole rows, so a quantized row keeps its blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace remat {

// qwen35 is Qwen3.5 (formats/gguf_qwen35.h holds its names and transforms).
enum class GgufArch { llama, qwen2, qwen3, gemma3, gpt2, qwen35 };

// general.architecture's value; nullopt for any other architecture.
std::optional<GgufArch> gguf_arch(std::string_view name);
std::string_view gguf_arch_name(GgufArch a);

// A block tensor's name split after `prefix` ("model.layers." or "blk."): "<prefix><N>.<rest>"
// -> {N, rest}, N a plain decimal (no sign, no leading zero); nullopt for any other name.
std::optional<std::pair<std::string_view, std::string_view>> split_block(std::string_view name,
                                                                         std::string_view prefix);
// "model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight" (llama, qwen2);
// "h.3.attn.c_attn.weight" -> "blk.3.attn_qkv.weight" (gpt2). nullopt for a name with no GGUF
// counterpart.
std::optional<std::string> gguf_tensor_name(std::string_view hf_name, GgufArch arch);
// The inverse: a GGUF name to remat's parameter name; nullopt for tensors remat has no parameter
// for (e.g. rope_freqs).
std::optional<std::string> hf_tensor_name(std::string_view gguf_name, GgufArch arch);

// How the GGUF tensor of a parameter stores its values.
struct GgufLayout {
  bool transposed = false;  // GGUF holds the transpose of the Hugging Face matrix (gpt2 Conv1D)
  int rope_heads = 0;       // > 0: rows permuted in heads of rows / rope_heads rows (llama q, k)
  // Added on write, subtracted on read: gemma3 files hold each RMSNorm's gain 1 + w where remat
  // (and Hugging Face) keep the offset w.
  float norm_shift = 0.0f;
  // qwen35's linear-attention tensors: read and written whole through formats/gguf_qwen35.h's
  // transforms (value heads reordered, A_log as ssm_a = -exp(A_log)).
  bool qwen35_transform = false;
};
// `heads` and `kv_heads` are the model's query and key/value heads.
GgufLayout gguf_layout(std::string_view hf_name, GgufArch arch, int heads, int kv_heads);

// The GGUF row holding Hugging Face row `hf_row` of a tensor whose `rows` rows are permuted in
// `heads` heads (GgufLayout::rope_heads); hf_row itself when heads is 0.
uint64_t gguf_row_of(uint64_t hf_row, uint64_t rows, int heads);

}  // namespace remat
