// Hugging Face model folders, as transformers' from_pretrained reads and save_pretrained writes
// them: config.json (graph/hf_config.h) next to model.safetensors, or next to a shard index and
// its shards (runtime/weight_files.h). remat reads and writes them for GPT-2, Llama and Qwen2.
#pragma once

#include <filesystem>
#include <optional>

#include "graph/model_config.h"

namespace remat {

class Session;

inline constexpr const char* kHfConfigFile = "config.json";

// The model a checkpoint describes. A folder (or a shard index inside one): its config.json. A
// safetensors file: the GPT-2 its tensors imply, heads from its metadata or `heads`. Errors are
// std::invalid_argument "<path>: <what is wrong>".
ModelConfig checkpoint_model(const std::filesystem::path& path, std::optional<int> heads);

// Whether save_checkpoint(path) writes one file (a name ending in .safetensors) or a folder.
bool names_safetensors_file(const std::filesystem::path& path);

// config.json and model.safetensors into `dir`, created when missing (its parent must exist).
// Each file is replaced atomically and the weights are written first, so a failed or cancelled
// save leaves whatever the folder held before intact. Other files in `dir` are left alone
// (model.safetensors takes precedence over a shard index when the folder is loaded).
void save_hf_folder(const Session& session, const std::filesystem::path& dir);

// session.save(path) for a name ending in .safetensors, else save_hf_folder(session, path).
void save_checkpoint(const Session& session, const std::filesystem::path& path);

}  // namespace remat
