// A session's weights and adapters in the files other tools read: a Hugging Face model folder or
// one safetensors file (formats in formats/hf_folder.h), PEFT adapter folders
// (formats/peft_adapter.h), merged weights, and the same as GGUF files for llama.cpp
// (formats/gguf_model_writer.h, formats/gguf_adapter.h): a path ending in .gguf is written as
// GGUF, anything else as before. The formats themselves are pure C++ and know no session; this
// is where a session's values meet them, read from the device in bounded pieces.
#pragma once

#include <filesystem>
#include <string>

#include "formats/gguf.h"

namespace remat {

class Session;

// How the GGUF files below are written.
struct GgufSaveOptions {
  GgmlType matrix_type = GgmlType::f32;   // a model's matrices: f32, f16 or bf16
  GgmlType adapter_type = GgmlType::f32;  // an adapter's tensors: f32 or f16
  std::string name = "remat";             // general.name of a model
  // Keys a saved model carries (tokenizer.* of the model it started from, say;
  // gguf_tokenizer_metadata).
  GgufMetadata extra = GgufMetadata("extra metadata");
};

// config.json and model.safetensors into `dir`, created when missing (its parent must exist).
// Each file is replaced atomically and the weights are written first, so a failed or cancelled
// save leaves whatever the folder held before intact. Other files in `dir` are left alone
// (model.safetensors takes precedence over a shard index when the folder is loaded).
void save_hf_folder(const Session& session, const std::filesystem::path& dir);

// The model's weights (under LoRA the frozen base) as a GGUF model llama.cpp loads, atomically.
// Progress and cancellation as Session::save ("save", counting bytes of F32 values).
void save_gguf(const Session& session, const std::filesystem::path& path,
               const GgufSaveOptions& options = {});

// Whether save_checkpoint or save_merged to `path` can write what the session's last load read
// beside the parameters (formats/qwen35_file_extras.h: a Qwen3.5 checkpoint's MTP layers, in
// the other format when `path` is): std::invalid_argument naming what cannot be written, so a
// command refuses the save before a step rather than after training.
void check_checkpoint_writable(const Session& session, const std::filesystem::path& path);

// save_gguf for a name ending in .gguf, session.save(path) for one ending in .safetensors, else
// save_hf_folder(session, path).
void save_checkpoint(const Session& session, const std::filesystem::path& path,
                     const GgufSaveOptions& options = {});

// Writes the session's adapters to DIR (created if missing; its parent must exist), each file
// atomically, or to one GGUF LoRA adapter for a name ending in .gguf. `base_model` goes to
// base_model_name_or_path (may be empty; GGUF has no such key).
void save_adapter(const Session& session, const std::filesystem::path& dir,
                  const std::string& base_model, const GgufSaveOptions& options = {});
// Loads DIR, or a GGUF adapter for a name ending in .gguf, into the session's adapters (config
// and tensors must match its LoRA spec exactly) and resets the optimizer state.
// std::invalid_argument naming the mismatch; nothing changes then.
void load_adapter(Session& session, const std::filesystem::path& dir);
// Writes the model's weights with each adapter folded in, W + scale·(B·A)ᵀ for GPT-2's Conv1D
// [in, out] weights (W + scale·B·A for [out, in]), as F32 safetensors with the model's names,
// atomically; as a GGUF model (options.matrix_type) for a name ending in .gguf.
void save_merged(const Session& session, const std::filesystem::path& path,
                 const GgufSaveOptions& options = {});

}  // namespace remat
