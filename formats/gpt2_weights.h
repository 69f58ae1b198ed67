// GPT-2 parameters by Hugging Face name: the initialisation GPT-2 uses, the model shape a
// safetensors file implies, and matching a file's tensors to the model's parameters.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/safetensors.h"
#include "graph/model_config.h"

namespace remat {

// A parameter by HF GPT-2 name (e.g. "h.3.mlp.c_fc.weight") and shape as stored (Conv1D
// weights are [in, out]).
using ParameterSpec = TensorSpec;

// GPT-2's initialisation (Radford et al. 2019; the reference implementation): weights
// N(0, 0.02), residual projections (attn.c_proj, mlp.c_proj) N(0, 0.02/sqrt(2L)), biases 0,
// LayerNorm weights 1. Deterministic for a seed on every machine (seeded_normal_values,
// formats/model_weights.h).
std::vector<float> gpt2_initial_values(const ParameterSpec& p, const ModelConfig& model,
                                       uint64_t seed, std::size_t parameter_index);
// Elements [first, first + out.size()) of the same values, so a large tensor can be generated
// piece by piece: every element's value depends only on its index.
void gpt2_initial_values(const ParameterSpec& p, const ModelConfig& model, uint64_t seed,
                         std::size_t parameter_index, uint64_t first, std::span<float> out);

// The __metadata__ remat writes with GPT-2 weights: format "pt", n_head, n_layer, n_embd, n_ctx,
// vocab_size (infer_gpt2_config reads n_head back).
std::map<std::string, std::string> gpt2_metadata(const ModelConfig& model);

// The model a GPT-2 safetensors file describes: layers from h.{i}.*, dim and vocab from
// wte.weight, ctx from wpe.weight; heads from __metadata__ "n_head", else `heads`. Throws
// std::invalid_argument when the file is not a GPT-2 checkpoint or heads are unknown.
ModelConfig infer_gpt2_config(const SafetensorsHeader& file, std::optional<int> heads);
ModelConfig infer_gpt2_config(const SafetensorsContents& file, std::optional<int> heads);

// GPT-2 checkpoint tensors that are not parameters (names without "transformer."): the
// causal-mask buffers attn.bias and attn.masked_bias, and lm_head.weight (tied to wte).
bool gpt2_ignored_tensor(const std::string& name);

// For each parameter (in order), the file's tensor with that name, with or without a
// "transformer." prefix. Buffers GPT-2 checkpoints carry (attn.bias, attn.masked_bias) and a tied
// lm_head.weight are ignored. Missing, mis-shaped or unexpected tensors are
// std::invalid_argument naming them.
std::vector<const SafetensorsEntry*> match_gpt2_parameters(
    const SafetensorsHeader& file, const std::vector<ParameterSpec>& params);
std::vector<const NamedTensor*> match_gpt2_parameters(const SafetensorsContents& file,
                                                      const std::vector<ParameterSpec>& params);

}  // namespace remat
