// The safetensors __metadata__ remat writes with a model's weights, and the model a single
// safetensors file describes. GPT-2 keeps the keys llm.c-era tools read (gpt2_metadata); a
// Llama-family file carries its config.json text under kConfigMetadataKey, since its tensors
// alone do not say heads, key/value heads, RoPE base, scaling or norms. transformers ignores both
// (it reads metadata "format" only), so the files load there unchanged.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "formats/safetensors.h"
#include "graph/model_config.h"

namespace remat {

inline constexpr const char* kConfigMetadataKey = "config";

// format "pt" and the model's description: gpt2_metadata for GPT-2; for the Llama family
// kConfigMetadataKey holding hf_config_json(model).
std::map<std::string, std::string> model_metadata(const ModelConfig& model);

// The model a metadata map names under kConfigMetadataKey (validated as config.json is), or
// nullopt when it names none. std::invalid_argument for a config that does not parse or that
// remat cannot reproduce.
std::optional<ModelConfig> metadata_model(const std::map<std::string, std::string>& metadata);

// The model of one safetensors file: metadata_model, else the GPT-2 its tensors imply
// (infer_gpt2_config, heads from its metadata or `heads`).
ModelConfig safetensors_model(const SafetensorsHeader& file, std::optional<int> heads);
ModelConfig safetensors_model(const SafetensorsContents& file, std::optional<int> heads);

}  // namespace remat
