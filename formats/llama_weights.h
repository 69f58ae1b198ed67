// Llama-family parameters by Hugging Face name: the initialisation LlamaPreTrainedModel uses and
// the names a checkpoint may carry that are not parameters.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "formats/safetensors.h"
#include "graph/model_config.h"

namespace remat {

// LlamaPreTrainedModel._init_weights: Linear and Embedding weights N(0, 0.02)
// (initializer_range), RMSNorm weights 1 (Qwen3's q_norm and k_norm too), biases (Qwen2's q/k/v) 0;
// with norm_offset (Gemma 3, whose gains are 1 + weight) RMSNorm weights 0, as Gemma3RMSNorm
// starts. Elements [first, first + out.size()) of parameter `parameter_index`, deterministic for a
// seed on every machine (the same generator as GPT-2's, formats/model_weights.h).
void llama_initial_values(const TensorSpec& p, uint64_t seed, std::size_t parameter_index,
                          uint64_t first, std::span<float> out, bool norm_offset = false);

// Tensors a Llama-family checkpoint may hold that are not parameters of `model`, skipped when
// loading: rotary inv_freq buffers (older transformers versions) and, for a tied head, an
// lm_head.weight (transformers ties it to the embedding on load, whatever the file holds).
bool llama_ignored_tensor(const std::string& name, const ModelConfig& model);

}  // namespace remat
