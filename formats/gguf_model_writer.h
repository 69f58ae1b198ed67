// Writing a model as the GGUF file llama.cpp's converter (convert_hf_to_gguf.py) would make of
// the same Hugging Face checkpoint, so llama.cpp loads what remat trained: its metadata keys
// (general.*, <arch>.* hyperparameters, tokenizer keys the caller carries over) and its tensors
// under GGUF names in GGUF layout (formats/gguf_names.h: llama's q/k rows permuted for RoPE,
// gpt2's Conv1D matrices transposed). Values come from the caller piece by piece in Hugging Face
// order, so host memory stays bounded by the pieces (at most kGgufWritePieceFloats floats), not
// by the model. What is written reads back through formats/gguf_model.h exactly (F32) or rounded
// to nearest even (F16, BF16).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_names.h"
#include "formats/gguf_writer.h"
#include "graph/model_config.h"

namespace remat {

// The most floats the writer asks for, or holds for a transposed matrix, at a time.
inline constexpr uint64_t kGgufWritePieceFloats = uint64_t(1) << 22;

// The GGUF architecture of a remat model: qwen35 for Qwen3.5; gpt2; qwen2 for the Llama family with
// q/k/v biases (Qwen2's layout, RoPE on halves); llama otherwise (RoPE rows permuted in the file).
// qwen3 for q/k norms (Hugging Face's order, like qwen2). std::invalid_argument for a model remat
// has no GGUF form for: q/k norms with biases; llama3 RoPE scaling on qwen2 or qwen3 (llama.cpp
// reads rope_freqs, formats/gguf_rope_freqs.h, in llama models only).
// gemma3 for Gemma 3, whose query_pre_attn_scalar must be gguf_gemma3_query_scalar (llama.cpp
// reads none); its window, layer period, local RoPE base and linear scaling are written as keys.
GgufArch gguf_arch_of(const ModelConfig& m);

// The query_pre_attn_scalar llama.cpp assumes for a Gemma 3 model of this shape.
float gguf_gemma3_query_scalar(const ModelConfig& m);

// general.file_type (llama_ftype) of a model whose matrices are `matrix_type`: ALL_F32 0,
// MOSTLY_F16 1, MOSTLY_BF16 32. std::invalid_argument for another type.
uint32_t gguf_file_type(GgmlType matrix_type);

// A tensor written as the bytes a file held: a Qwen3.5 model's MTP block passed through, or an
// untrained A_log's ssm_a as it was read (formats/qwen35_file_extras.h).
struct GgufRawTensor {
  GgufTensorSpec spec;
  std::vector<std::byte> bytes;  // gguf_tensor_bytes(spec) of them
};

// How to write a model.
struct GgufModelOptions {
  // Tensors of two dimensions; 1-D tensors (norms, biases) stay F32, as the converter keeps them.
  // f32, f16 or bf16.
  GgmlType matrix_type = GgmlType::f32;
  std::string name = "remat";  // general.name
  // Keys added after the model's own (a tokenizer's tokenizer.* keys and chat template, say); a
  // key the model's metadata also has is refused. Without tokenizer.ggml.model the file says
  // "none" (llama.cpp then loads it without a vocabulary: token ids in, logits out).
  GgufMetadata extra = GgufMetadata("extra metadata");
  // Written after the parameters, as they are (a Qwen3.5 model's blk.N.* MTP tensors; with
  // them its metadata counts m.qwen35_layers.mtp_layers blocks more, without them none).
  std::vector<GgufRawTensor> raw;
  // Parameters (by remat's name) written as these bytes instead of from their values; the spec
  // must be the parameter's GGUF name and dimensions.
  std::vector<std::pair<std::string, GgufRawTensor>> replaced;
};

// std::invalid_argument for a model or matrix type write_gguf_model refuses: the one rule the
// writer checks and `remat train` checks before a step runs (gguf_arch_of, gguf_file_type).
void check_gguf_model(const ModelConfig& m, GgmlType matrix_type);

// The keys of an input model's metadata that a model saved from it carries over: tokenizer.*
// (vocabulary, merges, special tokens, chat template), in their order.
GgufMetadata gguf_tokenizer_metadata(const GgufMetadata& input);

// The metadata of model `m`, in the converter's order: general.architecture, .type "model",
// .name; <arch>.block_count, .context_length, .embedding_length, .feed_forward_length,
// .attention.head_count, then for llama/qwen2 .attention.head_count_kv, .rope.freq_base,
// .attention.layer_norm_rms_epsilon, .rope.dimension_count, and for gpt2
// .attention.layer_norm_epsilon; <arch>.vocab_size; general.file_type,
// general.quantization_version 2; then `options.extra`. Integers are uint32, floats float32, as
// gguf-py writes them. No key for llama3 RoPE scaling: the converter writes none, only the
// rope_freqs tensor. std::invalid_argument where check_gguf_model refuses.
GgufMetadata gguf_model_metadata(const ModelConfig& m, const GgufModelOptions& options);

// A parameter as remat names it: its Hugging Face name and row-major shape.
struct GgufSourceTensor {
  std::string name;
  std::vector<int64_t> shape;
};
// Elements [first, first + out.size()) of tensors[index], in Hugging Face (row-major) order.
using GgufSourceReader =
    std::function<void(std::size_t index, uint64_t first, std::span<float> out)>;

// The GGUF tensor a parameter becomes: its name, and ggml's dimensions (the GGUF layout's).
// std::invalid_argument naming a parameter with no GGUF name or of a shape the layout refuses.
GgufTensorSpec gguf_tensor_spec(const GgufSourceTensor& t, const ModelConfig& m,
                                GgmlType matrix_type);

// Writes `tensors` (every parameter of `m`, in any order; the file keeps it) to `path`
// atomically: any previous file is kept when reading or writing fails. A model with llama3 RoPE
// scaling gets rope_freqs.weight first, as the converter writes it (formats/gguf_rope_freqs.h).
// `progress`, when given, is told the floats written so far after each piece.
void write_gguf_model(const std::filesystem::path& path, const ModelConfig& m,
                      const std::vector<GgufSourceTensor>& tensors, const GgufSourceReader& read,
                      const GgufModelOptions& options,
                      const std::function<void(uint64_t floats)>& progress = {});

// Writes one parameter's values into `out` (a GgufWriter about to receive its tensor) in the
// GGUF layout `layout` of Hugging Face shape `shape`: rows streamed in pieces, RoPE rows permuted
// one head at a time, transposed matrices assembled a band of stored rows at a time, Gemma 3's
// norm offsets shifted to gains.
void write_gguf_values(GgufWriter& out, const std::vector<int64_t>& shape, const GgufLayout& layout,
                       const std::function<void(uint64_t first, std::span<float> out)>& read,
                       const std::function<void(uint64_t floats)>& progress = {});

}  // namespace remat
