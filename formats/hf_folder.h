// Hugging Face model folders, as transformers' from_pretrained reads and save_pretrained writes
// them: config.json (formats/hf_config.h) next to model.safetensors, or next to a shard index and
// its shards (formats/weight_files.h). remat reads and writes them for GPT-2, Llama and Qwen2;
// this is the format's side (which model a checkpoint describes), runtime/session_files.h the
// session's (saving one).
#pragma once

#include <filesystem>
#include <optional>

#include "graph/model_config.h"

namespace remat {

inline constexpr const char* kHfConfigFile = "config.json";

// The model a checkpoint describes. A GGUF file: its metadata (formats/gguf_model.h). A folder
// (or a shard index inside one): its config.json. A
// safetensors file: the model its metadata names (formats/model_metadata.h), else the GPT-2 its
// tensors imply, heads from its metadata or `heads`. Errors are
// std::invalid_argument "<path>: <what is wrong>".
ModelConfig checkpoint_model(const std::filesystem::path& path, std::optional<int> heads);

// Whether save_checkpoint(path) writes one file (a name ending in .safetensors) or a folder.
bool names_safetensors_file(const std::filesystem::path& path);

}  // namespace remat
