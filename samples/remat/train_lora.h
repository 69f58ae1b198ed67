// `remat train`'s LoRA flags: --lora R, --lora-alpha, --lora-targets, --lora-init DIR (continue a
// PEFT adapter, or a llama.cpp one in a .gguf file), --save-adapter DIR (PEFT's files, or a .gguf
// adapter for llama.cpp, --adapter-dtype) and --merge-out OUT.safetensors (full weights with the
// adapters folded in, or a .gguf model).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.h"
#include "graph/lora.h"
#include "runtime/session.h"
#include "runtime/session_files.h"

namespace remat::cli {

struct TrainLora {
  LoraSpec spec;                                      // rank 0: full fine-tuning
  std::optional<std::filesystem::path> init;          // --lora-init DIR or A.gguf
  std::optional<std::filesystem::path> save_adapter;  // --save-adapter DIR or A.gguf
  GgmlType adapter_type = GgmlType::f32;              // --adapter-dtype
  std::optional<std::filesystem::path> merge_out;     // --merge-out FILE
  std::string base_model;  // base_model_name_or_path for the adapter config (the --init file)
};

std::vector<FlagSpec> train_lora_flags();
// `base_init`: the --init weights, if any; `model`: the model (its default targets). UsageError
// for flags that need --lora and for outputs in folders that do not exist; a --lora-init whose
// config disagrees with --lora is refused naming both.
TrainLora parse_train_lora(const Args& args, const std::optional<std::filesystem::path>& base_init,
                           const ModelConfig& model);

// After the base weights are in: loads --lora-init's adapter into the session.
void load_lora_init(Session& session, const TrainLora& lora);
// "lora     r 8, alpha 16, ..." (nothing without LoRA).
void print_lora(const Session& session, const TrainLora& lora);
// Writes --save-adapter and --merge-out, whichever were asked for (.gguf ones as `gguf` says);
// prints what was written when `announce`.
void save_lora_outputs(const Session& session, const TrainLora& lora, const GgufSaveOptions& gguf,
                       bool announce);

}  // namespace remat::cli
