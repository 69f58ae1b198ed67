// Parameters of any supported model by Hugging Face name: initial values and matching a
// checkpoint's tensors to the model's parameters, dispatched on ModelConfig::arch to the family's
// rules (formats/gpt2_weights.h, formats/llama_weights.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "formats/safetensors.h"
#include "graph/model_config.h"

namespace remat {

// N(0, stddev) values of element [first, first + out.size()) of parameter `parameter_index`: one
// independent stream per parameter (splitmix64 and Box-Muller, the same on every machine), so
// adding a layer does not shift the others' values and any piece can start anywhere.
void seeded_normal_values(uint64_t seed, std::size_t parameter_index, double stddev, uint64_t first,
                          std::span<float> out);

// The family's initial value of elements [first, first + out.size()) of parameter p.
void initial_values(const TensorSpec& p, const ModelConfig& model, uint64_t seed,
                    std::size_t parameter_index, uint64_t first, std::span<float> out);

// For each parameter (in order), the file's tensor with that name. GPT-2 also accepts a
// "transformer." prefix and skips its attention-mask buffers and a tied lm_head.weight; Llama
// names are exact (formats/llama_weights.h says what is skipped). Missing, mis-shaped or
// unexpected tensors are std::invalid_argument naming them.
std::vector<const SafetensorsEntry*> match_model_parameters(const SafetensorsHeader& file,
                                                            const std::vector<TensorSpec>& params,
                                                            const ModelConfig& model);
std::vector<const NamedTensor*> match_model_parameters(const SafetensorsContents& file,
                                                       const std::vector<TensorSpec>& params,
                                                       const ModelConfig& model);

}  // namespace remat
