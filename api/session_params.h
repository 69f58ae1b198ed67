// remat_session_params, the C API's one input struct, to and from the library's SessionConfig:
// defaults, struct_size checks, presets with per-field overrides, and the range checks the
// library leaves to its callers (AdamW settings, accumulation).
#pragma once

#include <string>

#include "api/model_fields.h"
#include "formats/safetensors.h"
#include "graph/model_config.h"
#include "remat/remat.h"
#include "runtime/session.h"
#include "runtime/training_state.h"

namespace remat::capi {

void fill_default_params(remat_session_params& params);

// `params` as this library's struct: remat 0.2's shorter struct (no schedule), the one before
// the LoRA fields and the one before loss_chunk are read up to their size and the rest defaulted;
// any other size is refused.
remat_session_params read_params(const remat_session_params* params);
// The same check for calls that write the model fields only (present in both sizes).
void require_params(const remat_session_params* params);

// Fills the fields of `params` that a training state determines (model, batch, seq, accum, seed,
// arena, AdamW, schedule, loss chunk; policy NULL: auto under the state's arena, else none),
// refusing a state the struct cannot describe (dropout).
void set_from_state(remat_session_params& params, const TrainingState& state);

// Checks `params` (NULL, struct_size, every field) and returns the configuration it describes.
// std::invalid_argument (via ApiError) naming the first bad field.
SessionConfig session_config(const remat_session_params* params);

// Sets params.quantized_base (where the struct has it) to the .gguf file `checkpoint` names, a
// copy that lives as long as the process, else to NULL: a LoRA session of a GGUF checkpoint then
// keeps its blocks unless params.base_blocks says otherwise (formats/base_blocks.h).
void set_base_file(remat_session_params& params, const char* checkpoint);
// Sets the model fields to the shape a GPT-2 checkpoint describes (heads from its metadata).
void set_model_from_checkpoint(remat_session_params& params, const SafetensorsContents& file);
}  // namespace remat::capi
