// Hugging Face config.json to and from ModelConfig: the keys of transformers' GPT2Config
// (model_type gpt2), LlamaConfig (llama, with Llama 3's llama3 rope_scaling), Qwen2Config (qwen2, a
// Llama with q/k/v biases), Qwen3Config (qwen3: per-head q/k RMSNorm, explicit head_dim) and
// Gemma3TextConfig (gemma3_text: layer_types or sliding_window_pattern, sliding_window,
// query_pre_attn_scalar, the local layers' own RoPE base; soft-capping refused) and Qwen3.5
// (qwen3_5_text, or qwen3_5's text_config: formats/hf_qwen35.h), each as
// transformers 4 or transformers 5 writes it (RoPE keys and dtype: formats/hf_rope.h). A pure
// mapping, no files, so that planning a checkpoint's model needs no device and no runtime. Every
// config remat cannot reproduce exactly is refused: a model that loads but computes something else
// would be worse than an error.
#pragma once

#include <string>
#include <string_view>

#include "base/json.h"
#include "graph/model_config.h"

namespace remat {

// The model a config.json describes, validated. Absent optional keys take transformers' defaults
// for that model_type. Anything remat does not implement is std::invalid_argument, one line
// naming the key and its value, e.g. "hidden_act is \"gelu\"; the Llama family here uses silu".
// rope_scaling (or rope_parameters) of type llama3 needs its factors; other RoPE types,
// soft-capping and mixture-of-experts keys are refused naming the key. The result's config_keys
// says which transformers spelled it.
ModelConfig model_config_from_hf(const JsonValue& config);
// The same from config.json's text (a JSON syntax error is std::invalid_argument too).
ModelConfig model_config_from_hf_json(std::string_view text);

// config.json text for `model`, in transformers' spelling with "architectures" and dtype float32:
// GPT2LMHeadModel, LlamaForCausalLM, Qwen2ForCausalLM when q/k/v have biases, or
// Qwen3ForCausalLM with q/k norms, Gemma3ForCausalLM (gemma3_text) for Gemma 3,
// Qwen3_5ForCausalLM (qwen3_5_text) for Qwen3.5; head_dim and the
// RoPE scaling written out, so the folder reads back as the same model. The keys are those of
// model.config_keys: transformers 4's (torch_dtype, rope_theta, rope_scaling; the default) or
// transformers 5's (dtype, rope_parameters).
// std::invalid_argument for a model config.json cannot describe (q/k norms with q/k/v biases).
std::string hf_config_json(const ModelConfig& model);

}  // namespace remat
