// Flags shared by `remat plan`, `remat train` and `remat bench`: the model (a preset with
// per-field overrides), the step's shape, and the checkpoint policy or arena budget.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.h"
#include "graph/cost_model.h"
#include "graph/lora.h"
#include "graph/model_config.h"
#include "planner/policy.h"

namespace remat::cli {

// --model --layers --dim --heads --vocab --ctx (and for the Llama family --kv-heads --ffn
// --rope-theta --norm-eps --tied-head --qkv-bias) --batch --seq --dropout --dtype --weights-dtype
// --arena --memory --policy
// --costs --device-profile, declared with their help and defaults.
std::vector<FlagSpec> model_flags();
// `flags` without the one named `name` (a command that does not take it).
std::vector<FlagSpec> without(std::vector<FlagSpec> flags, const std::string& name);

struct ModelSelection {
  std::string model_name;          // the preset the shape equals, "custom", or "from checkpoint"
  ModelConfig model;               // after overrides, validated
  TrainShape shape;                // batch, seq, dropout; validated against the model
  Policy policy;                   // --policy, or auto when --arena is given
  std::optional<uint64_t> arena;   // --arena
  std::optional<uint64_t> memory;  // --memory: the whole session's device bytes
  // --loss-chunk auto or not given: the planner picks it (shape.loss_chunk is 0 until then).
  bool choose_loss_chunk = false;
  std::optional<CostModel> costs;  // --costs
  std::string device_profile;      // --device-profile or REMAT_DEVICE_PROFILE; "" for none
};

// `base` (a model read from a checkpoint) replaces the preset; overrides still apply.
// Bad values are UsageError or std::invalid_argument (both exit 2). A loss chunk to choose is
// left to the session (SessionConfig::choose_loss_chunk) or resolve_loss_chunk, since the
// choice depends on LoRA and the device's binding limit.
ModelSelection parse_model_selection(const Args& args,
                                     std::optional<ModelConfig> base = std::nullopt);
// Without --memory (whose planner chooses with the rest of the plan), a chunk to choose becomes
// the one a session would plan with (planner/session_plan.h session_loss_chunk) on a device of
// this alignment and binding limit, for a command that plans or reports before the session.
void resolve_loss_chunk(ModelSelection& sel, const LoraSpec& lora, uint64_t alignment,
                        uint64_t max_binding_bytes);

// With LoRA on a .gguf `init`, keeps its block-quantized matrices in their blocks on the device
// (shape.block_weights: a QLoRA base), unless --base-blocks no decodes them to --weights-dtype:
// formats/base_blocks.h decides, as it does for the C API. --base-blocks without such an init is
// a UsageError.
void keep_base_blocks(ModelSelection& sel, const Args& args,
                      const std::optional<std::filesystem::path>& init, const LoraSpec& lora);

// --lora R, --lora-alpha A, --lora-targets LIST (remat plan and remat train).
std::vector<FlagSpec> lora_flags();
// The spec those flags give (rank 0: no --lora). --lora-alpha or --lora-targets without --lora
// are UsageErrors unless `rank_elsewhere` (train's --lora-init supplies the rank).
LoraSpec parse_lora_flags(const Args& args, bool rank_elsewhere = false);

// "L30 C576 H9 V49152 ctx8192", and for the Llama family " KV3 FFN1536 tied" (or "untied").
std::string model_shape_text(const ModelConfig& m);

}  // namespace remat::cli
