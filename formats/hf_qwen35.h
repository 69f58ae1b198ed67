// Qwen3.5's config.json (transformers' Qwen3_5TextConfig, model_type qwen3_5_text; or the
// multimodal Qwen3_5Config, model_type qwen3_5, whose text model is its text_config) to and from
// ModelConfig::qwen35. Read as formats/hf_config.h reads the other families: absent keys take
// Qwen3_5TextConfig's defaults, anything remat would compute differently is refused in one line.
#pragma once

#include "base/json_writer.h"
#include "formats/hf_config_keys.h"
#include "graph/model_config.h"

namespace remat {

// The text model of a qwen3_5_text config (`text` is config.json itself) or of a qwen3_5 one
// (`text` is its text_config, `outer` config.json; vision_config and the image/video token ids
// are ignored: remat trains the text model alone). Not validated; config_keys not set.
ModelConfig qwen35_from(const ConfigKeys& text, const ConfigKeys* outer);

// Whether a qwen3_5 config.json is spelled as transformers 5 writes it: rope_parameters or dtype
// in its text_config, or dtype beside it.
HfKeys qwen35_config_keys(const ConfigKeys& text, const ConfigKeys* outer);

// config.json's keys for a Qwen3.5 model, always as the text model alone (model_type
// qwen3_5_text, Qwen3_5ForCausalLM): remat holds no vision tower to describe, so a multimodal
// checkpoint is saved as its text model, which transformers and llama.cpp's converter both read.
void write_qwen35(JsonWriter& w, const ModelConfig& m);

}  // namespace remat
