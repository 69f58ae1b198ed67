// remat_session_params, the C API's one input struct, to and from the library's SessionConfig:
// defaults, struct_size checks, presets with per-field overrides, and the range checks the
// library leaves to its callers (AdamW settings, accumulation).
#pragma once

#include <cstddef>

#include "graph/model_config.h"
#include "remat/remat.h"
#include "runtime/safetensors.h"
#include "runtime/session.h"

namespace remat::capi {

void fill_default_params(remat_session_params& params);

// The size of a params struct from before the LoRA fields; such structs are still accepted.
inline constexpr std::size_t kParamsSizeBeforeLora = offsetof(remat_session_params, lora_rank);
// NULL or a struct_size other than sizeof or kParamsSizeBeforeLora: ApiError naming them.
void require_params(const remat_session_params* params);

// Checks `params` (NULL, struct_size, every field) and returns the configuration it describes.
// std::invalid_argument (via ApiError) naming the first bad field.
SessionConfig session_config(const remat_session_params* params);

// Sets the model fields to the shape a GPT-2 checkpoint describes (heads from its metadata).
void set_model_from_checkpoint(remat_session_params& params, const SafetensorsContents& file);

}  // namespace remat::capi
