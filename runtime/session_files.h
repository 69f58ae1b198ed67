// A session's weights and adapters in the files other tools read: a Hugging Face model folder or
// one safetensors file (formats in formats/hf_folder.h), PEFT adapter folders
// (formats/peft_adapter.h) and merged weights. The formats themselves are pure C++ and know no
// session; this is where a session's values meet them.
#pragma once

#include <filesystem>
#include <string>

namespace remat {

class Session;

// config.json and model.safetensors into `dir`, created when missing (its parent must exist).
// Each file is replaced atomically and the weights are written first, so a failed or cancelled
// save leaves whatever the folder held before intact. Other files in `dir` are left alone
// (model.safetensors takes precedence over a shard index when the folder is loaded).
void save_hf_folder(const Session& session, const std::filesystem::path& dir);

// session.save(path) for a name ending in .safetensors, else save_hf_folder(session, path).
void save_checkpoint(const Session& session, const std::filesystem::path& path);

// Writes the session's adapters to DIR (created if missing; its parent must exist), each file
// atomically. `base_model` goes to base_model_name_or_path (may be empty).
void save_adapter(const Session& session, const std::filesystem::path& dir,
                  const std::string& base_model);
// Loads DIR into the session's adapters (config and tensors must match its LoRA spec exactly) and
// resets the optimizer state. std::invalid_argument naming the mismatch; nothing changes then.
void load_adapter(Session& session, const std::filesystem::path& dir);
// Writes the model's weights with each adapter folded in, W + scale·(B·A)ᵀ for GPT-2's Conv1D
// [in, out] weights (W + scale·B·A for [out, in]), as F32 GPT-2 safetensors, atomically.
void save_merged(const Session& session, const std::filesystem::path& path);

}  // namespace remat
