// LoRA adapters in PEFT's files: DIR/adapter_model.safetensors (keys
// "base_model.model.<module path>.lora_A.weight" [R, in] and ".lora_B.weight" [out, R]) and
// DIR/adapter_config.json, so `PeftModel.from_pretrained(base, DIR)` loads what remat trained and
// remat continues what PEFT wrote: the keys, the config and PEFT's initialisation. A session's
// adapters are written and read, and merged into full weights, in runtime/session_files.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/safetensors.h"
#include "graph/lora.h"
#include "graph/model_config.h"

namespace remat {

// The two files of an adapter folder.
inline constexpr const char* kPeftConfigFile = "adapter_config.json";
inline constexpr const char* kPeftWeightsFile = "adapter_model.safetensors";

// PEFT's initialisation (init_lora_weights=True): A by kaiming_uniform_(a=sqrt(5)), which is
// U(-1/sqrt(in), 1/sqrt(in)); B zero, so training starts from the base model exactly. Elements
// [first, first + out.size()) of the tensor named "*.lora_A.weight" or "*.lora_B.weight";
// deterministic for (seed, adapter index) on every machine.
void lora_initial_values(const TensorSpec& p, uint64_t seed, std::size_t adapter_index,
                         uint64_t first, std::span<float> out);

// "h.0.attn.c_attn.lora_A.weight" -> "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight"
// for GPT-2 (GPT2LMHeadModel keeps its blocks under "transformer."); Llama names
// ("model.layers.0...") already carry their path and only gain "base_model.model.", Qwen3.5's
// too (Qwen3_5ForCausalLM, the text model remat saves).
std::string peft_key(const std::string& parameter, Architecture arch);
// A key of an adapter PEFT trained on the multimodal Qwen3_5ForConditionalGeneration, whose text
// model sits at model.language_model ("base_model.model.model.language_model.layers.0...") as
// peft_key names it for the text model ("base_model.model.model.layers.0..."); nullopt for a key
// of its vision tower (model.visual.*) or MTP layers. Other keys come back unchanged.
std::optional<std::string> peft_text_model_key(std::string_view key);

// What an adapter_config.json says, after refusing what remat does not implement (DoRA, rsLoRA,
// trained biases, LoRA dropout, per-layer ranks or alphas, regex targets, modules_to_save,
// layers_to_transform, non-LoRA PEFT types), each named in a std::invalid_argument.
struct AdapterConfig {
  int rank = 0;
  double alpha = 0;
  std::vector<std::string> targets;
  bool fan_in_fan_out = false;
  std::string base_model;  // base_model_name_or_path, or empty
};
AdapterConfig parse_adapter_config(std::string_view json, const std::string& origin);
AdapterConfig read_adapter_config(const std::filesystem::path& dir);
// The spec an adapter directory implies; `given` (rank 0: none; no targets: the model's
// defaults) must agree with it.
LoraSpec lora_spec_for(const AdapterConfig& file, const LoraSpec& given, const ModelConfig& model,
                       const std::string& origin);
// The config of `spec`, whose targets are given (lora_targets resolves the defaults).
std::string adapter_config_json(const LoraSpec& spec, bool fan_in_fan_out,
                                const std::string& base_model);

}  // namespace remat
