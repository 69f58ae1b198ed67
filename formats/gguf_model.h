// A model in a GGUF file as remat trains it: the ModelConfig its `<arch>.*` keys and tensors
// describe, and its tensors under remat's parameter names and Hugging Face shapes, read as floats
// (blocks decoded exactly as ggml decodes them, formats/gguf_blocks.h; llama's RoPE row
// permutation undone and gpt2's transposed matrices turned back, formats/gguf_names.h). So a GGUF
// file loads wherever a safetensors checkpoint does (formats/weight_files.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_names.h"
#include "formats/safetensors.h"
#include "graph/model_config.h"

namespace remat {

// The model `file` holds: general.architecture llama, qwen2, qwen3 (q/k norms), qwen35 (Qwen3.5:
// its qwen35.* keys, formats/gguf_qwen35.h; the tensors of its MTP block, blk.N for N past the
// trunk's layers, belong to no parameter and are left out of GgufWeights), gemma3 (Gemma 3:
// besides, .attention.sliding_window, .attention.sliding_window_pattern, .rope.freq_base_swa,
// .rope.scaling.type/factor as llama.cpp reads them) or gpt2; hyperparameters from
// <arch>.block_count, .embedding_length, .feed_forward_length, .attention.head_count,
// .attention.head_count_kv, .rope.freq_base, .attention.layer_norm_rms_epsilon (llama, qwen2),
// .context_length, .attention.key_length (the head size, when given); the vocabulary from
// token_embd's rows; the head tied when the file has no `output` tensor; q/k/v biases when
// blk.0.attn_q.bias exists; Llama 3's RoPE scaling from a llama model's rope_freqs tensor
// (formats/gguf_rope_freqs.h: refused where no llama3 rule reproduces it, and in other models).
// std::invalid_argument "<origin>: ..." naming the key or tensor that is missing, of the wrong
// type, or not supported.
ModelConfig gguf_model_config(const GgufFile& file);

// A GGUF model's tensors as a safetensors-like header (remat's parameter names, row-major Hugging
// Face shapes, dtype the GGUF type's name, e.g. "q4_K") and float reads of any element range.
class GgufWeights {
 public:
  explicit GgufWeights(GgufFile file);

  const GgufFile& file() const { return file_; }
  const ModelConfig& model() const { return model_; }
  // Tensors with a parameter name (rope_freqs and other extras are left out); begin/end unused.
  const SafetensorsHeader& header() const { return header_; }
  // The first tensor stored in a block-quantized type, or nullptr when every one is f32/f16/bf16.
  const GgufTensor* first_quantized() const;
  // Elements [first, first + out.size()) of `t` (one of header().tensors) in Hugging Face order.
  // std::invalid_argument naming the tensor for a non-finite value. Host memory: one stored row
  // at a time (bytes and floats), whatever the request.
  void read(const SafetensorsEntry& t, uint64_t first, std::span<float> out) const;

  // The weights that can stay in their blocks on the device (QLoRA): every matrix stored in a
  // block-quantized type, with its block format (Gemma's norms are F32 vectors, never blocks;
  // a qwen35 linear-attention matrix only where the converter moved whole rows,
  // qwen35_moves_rows_only: every one of Qwen3.5-0.8B's and -2B's).
  // The graph keeps those that block-decoding kernels alone read (graph/weight_dtype.h), gpt2's
  // Conv1D matrices as the file's [out, in] rows (conv1d_held_out_in).
  std::vector<BlockWeight> block_weights() const;
  // Bytes [offset, offset + out.size()) of `t` (one of block_weights()) as a block tensor holds
  // them: the stored rows (llama's RoPE permutation and qwen35's value-head order undone by
  // moving whole rows; gpt2's Conv1D
  // matrices not transposed: their rows are [out, in]), each row's blocks as stored. Host
  // memory: one stored row at a time.
  void read_blocks(const SafetensorsEntry& t, uint64_t offset, std::span<std::byte> out) const;

 private:
  struct Source {
    const GgufTensor* tensor;
    GgufLayout layout;
  };
  void read_row(const GgufTensor& t, uint64_t row, std::span<float> out) const;
  const Source& source_of(const SafetensorsEntry& e, const char* what) const;

  GgufFile file_;
  ModelConfig model_;
  SafetensorsHeader header_;
  std::vector<Source> sources_;  // sources_[i] backs header_.tensors[i]
  mutable std::vector<std::byte> row_bytes_;
  mutable std::vector<float> row_values_;
  mutable std::vector<float> whole_;  // a qwen35 tensor read whole (GgufLayout::qwen35_transform)
  mutable std::size_t whole_of_ = SIZE_MAX;  // its index in sources_
};

// Empty when the model can be fully fine-tuned; otherwise one line naming its first quantized
// tensor and `fix` (how the caller asks for LoRA). Full fine-tuning would train float copies of
// quantized weights (four to eight times the file on the device) that could not be saved back as
// the file; LoRA trains adapters on the quantized base instead.
std::string full_fine_tune_refusal(const GgufWeights& w, std::string_view fix);

}  // namespace remat
