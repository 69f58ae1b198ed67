// remat_session_params' model fields (preset, sizes, family and the family's fields) to and from
// the library's ModelConfig: what remat_plan and remat_session_create build, and what
// remat_session_params_from_file writes for a checkpoint.
#pragma once

#include <string>

#include "graph/model_config.h"
#include "remat/remat.h"

namespace remat::capi {

// The model `p` describes (a full-size struct, as read_params returns): the preset (or GPT-2) with
// the five size overrides, then the family `p.family` names. std::invalid_argument (via ApiError)
// naming the first bad field, or a field set for another family.
ModelConfig model_of(const remat_session_params& p);

// Sets the model fields (model NULL, the five sizes, family and the family's fields, and
// config_keys) to `model`, writing no further than params.struct_size; std::invalid_argument
// naming `origin` for a model a struct of that size cannot describe (a Llama-family model before
// `family`, Gemma 3 before `sliding_window`, Qwen3.5 before `full_attention_interval`).
void set_model(remat_session_params& params, const ModelConfig& model, const std::string& origin);

}  // namespace remat::capi
