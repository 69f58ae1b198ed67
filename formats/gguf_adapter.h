// LoRA adapters as GGUF files llama.cpp loads (llama_adapter_lora_init, `llama-cli -m M.gguf
// --lora A.gguf`), written as llama.cpp's convert_lora_to_gguf.py writes them and read back:
//   - metadata general.architecture (the base model's: llama, qwen2, qwen3, gemma3, qwen35 or
//     gpt2), general.type
//     "adapter", general.name, adapter.type "lora", adapter.lora.alpha (float32); llama.cpp
//     scales each pair by alpha / r, r being lora_b's ne[0], as PEFT does;
//   - per adapted weight `<GGUF name>` (formats/gguf_names.h, e.g. blk.0.attn_q.weight) the
//     tensors `<GGUF name>.lora_a`, ggml dimensions [in, r] (PEFT's A [r, in] as stored), and
//     `<GGUF name>.lora_b`, [r, out] (PEFT's B [out, r]), so that B·A has the base tensor's
//     layout. Where the base file permutes a weight's rows (llama's q and k, for RoPE), B's rows
//     are permuted the same way; A is not. gpt2's Conv1D weights are stored transposed, [out, in]
//     rows, so PEFT's A and B (fan_in_fan_out) go in as they are. Qwen3.5 (qwen35) files store
//     value heads tiled where Hugging Face groups them by key head (formats/gguf_qwen35.h): the
//     rows of B for in_proj_qkv, in_proj_z, in_proj_a and in_proj_b, and the columns of A for
//     out_proj, are permuted as the base weight's rows or columns are (nothing moves when value
//     and key heads are as many, as in Qwen3.5-0.8B and -2B).
// F32 by default; F16 halves the file (llama.cpp multiplies either).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_names.h"
#include "formats/peft_adapter.h"
#include "graph/lora.h"
#include "graph/model_config.h"

namespace remat {

// One adapted weight: its Hugging Face name ("model.layers.0.self_attn.q_proj.weight") and the
// PEFT shapes of its pair, A [rank, in] and B [out, rank].
struct GgufAdapterPair {
  std::string weight;
  int64_t rank = 0, in = 0, out = 0;
};
// Elements [first, first + out.size()) of pair `index`'s A (`b` false) or B (`b` true), in
// PEFT's row-major layout.
using GgufAdapterReader =
    std::function<void(std::size_t index, bool b, uint64_t first, std::span<float> out)>;

// general.architecture, .type, .name, adapter.type, adapter.lora.alpha, in that order.
GgufMetadata gguf_adapter_metadata(const ModelConfig& m, double alpha);

// Writes the adapters of model `m` to `path` atomically, `type` f32 or f16. std::invalid_argument
// for a weight with no GGUF name.
void write_gguf_adapter(const std::filesystem::path& path, const ModelConfig& m, double alpha,
                        const std::vector<GgufAdapterPair>& pairs, const GgufAdapterReader& read,
                        GgmlType type = GgmlType::f32);

// A GGUF LoRA adapter opened for reading: its keys checked (general.type "adapter", adapter.type
// "lora", general.architecture one remat writes), every tensor a .lora_a or .lora_b of a
// weight remat has, each weight with both, one rank throughout. std::invalid_argument
// "<file>: ..." naming what is wrong.
class GgufAdapter {
 public:
  explicit GgufAdapter(GgufFile file);
  static GgufAdapter open(const std::filesystem::path& path) {
    return GgufAdapter(GgufFile::open(path));
  }

  const GgufFile& file() const { return file_; }
  GgufArch arch() const { return arch_; }
  bool qwen35() const { return qwen35_; }
  // What the file says as an adapter config: rank, alpha (adapter.lora.alpha; r when absent or
  // 0, which llama.cpp reads as scale 1), targets (the adapted modules' names within a block as
  // PEFT's target_modules would give them: Llama's "q_proj", ..., GPT-2's "attn.c_attn", ...;
  // a Qwen3.5 block counts as the layer kind whose mixer projections it adapts),
  // fan_in_fan_out for gpt2. Against a `requested` spec (rank > 0) the file keeps no names of its
  // own: its alpha, float32 in the file, is the requested one when that rounds to it, and its
  // targets are the requested ones (or the defaults) when they select exactly the modules the
  // file adapts, so lora_spec_for compares what matters.
  AdapterConfig config(const LoraSpec& requested = {}) const;
  // The Hugging Face names of the adapted weights, in file order.
  const std::vector<std::string>& weights() const { return weights_; }
  // PEFT's A [rank, in] (`b` false) or B [out, rank] of `weight` in model `m` (q/k rows of B
  // back in Hugging Face order for llama, value heads for qwen35); std::invalid_argument when the
  // file has no such pair or its dimensions are not `shape`.
  std::vector<float> read(const std::string& weight, bool b, const std::vector<int64_t>& shape,
                          const ModelConfig& m) const;

 private:
  GgufFile file_;
  GgufArch arch_ = GgufArch::llama;
  bool qwen35_ = false;
  std::string arch_name_;  // general.architecture
  int rank_ = 0;
  std::vector<std::string> weights_;
};

}  // namespace remat
