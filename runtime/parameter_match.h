// Which checkpoint tensor holds which parameter, under each model family's Hugging Face names:
// GPT-2's ("h.0.attn.c_attn.weight", with or without a "transformer." prefix) and the Llama
// family's exact names ("model.layers.0.self_attn.q_proj.weight", "lm_head.weight" when untied).
#pragma once

#include <string>
#include <vector>

#include "graph/model_config.h"
#include "runtime/safetensors.h"

namespace remat {

// A parameter by name and shape as stored (GPT-2's Conv1D weights are [in, out]).
using ParameterSpec = TensorSpec;

// The parameter a checkpoint tensor named `file_name` holds under `model`'s family, or "" for a
// tensor such checkpoints carry that is no parameter: GPT-2's causal-mask buffers (attn.bias,
// attn.masked_bias), a head tied to the embedding (lm_head.weight), Llama's rotary inv_freq.
std::string parameter_name(const std::string& file_name, const ModelConfig& model);

// For each parameter (in order), the file's tensor that holds it. Missing, mis-shaped,
// unexpected or doubled tensors are std::invalid_argument naming them.
std::vector<const SafetensorsEntry*> match_parameters(const SafetensorsHeader& file,
                                                      const std::vector<ParameterSpec>& params,
                                                      const ModelConfig& model);
std::vector<const NamedTensor*> match_parameters(const SafetensorsContents& file,
                                                 const std::vector<ParameterSpec>& params,
                                                 const ModelConfig& model);

}  // namespace remat
