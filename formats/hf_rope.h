// RoPE in config.json, as transformers 4 and transformers 5 spell it, read and written for the
// Llama family (llama, qwen2, qwen3) and Gemma 3 (gemma3_text).
//
// transformers 4 wrote top-level rope_theta and rope_scaling (null, or {"rope_type": "llama3",
// ...}); Gemma 3 added rope_local_base_freq for its local layers, its rope_scaling applying to the
// global ones. transformers 5 writes one rope_parameters object instead, holding rope_type,
// rope_theta and the scaling keys; Gemma 3's holds one such object per layer type,
// {"full_attention": {...}, "sliding_attention": {...}}. Either spelling reads to the same
// ModelConfig, whose config_keys records which one it was, and the writers below write that one.
// The rules follow transformers 5's own reading (modeling_rope_utils.py,
// RotaryEmbeddingConfigMixin.convert_rope_params_to_dict and standardize_rope_params;
// models/gemma3/modular_gemma3.py, Gemma3TextConfig.convert_rope_params_to_dict).
#pragma once

#include "base/json_writer.h"
#include "formats/hf_config_keys.h"
#include "graph/model_config.h"

namespace remat {

// Whether config.json is spelled as transformers 5 writes it: rope_parameters or dtype given.
HfKeys config_keys_of(const ConfigKeys& config);

// The Llama family's rope_theta and rope_scaling into `m` (its ctx already read). Plain RoPE or
// llama3 scaling; any other rope_type, or a partial_rotary_factor other than 1, is refused naming
// the key and its value.
void read_llama_rope(const ConfigKeys& config, ModelConfig& m);
// Gemma 3's global base and linear factor (rope_theta, gemma.rope_linear), local base
// (gemma.local_rope_theta) into `m`. Global layers take no scaling or linear;
// local layers none.
void read_gemma3_rope(const ConfigKeys& config, ModelConfig& m);

// Qwen3.5's RoPE into `m` (head_size already read): rope_theta (transformers' default 10000),
// partial_rotary_factor (0.25) and the multimodal split mrope_section ([11, 11, 10]) and
// mrope_interleaved (true), from rope_parameters (transformers 5) or top-level rope_theta and
// partial_rotary_factor with rope_scaling (transformers 4; its "type" may read "mrope").
// rope_type must be default (or mrope). Why text-only training can take MRoPE as plain partial
// RoPE: transformers' Qwen3_5TextRotaryEmbedding gives each text token equal temporal, height
// and width positions, so every frequency i rotates by position * inv_freq[i] whichever section
// holds it, interleaved or not. That holds for any split whose sections sum to the rotated
// channels' frequencies (rotary_dims / 2); other sums are refused (ModelConfig::validate), as
// transformers' non-interleaved split could not apply them. Images or video (distinct
// positions) are outside remat, which trains text.
void read_qwen35_rope(const ConfigKeys& config, ModelConfig& m);

// The RoPE keys of `m` in its config_keys' spelling, and dtype or torch_dtype (float32) the same.
void write_llama_rope(JsonWriter& w, const ModelConfig& m);
// Gemma 3 in two places, where transformers 4 put its keys: the bases (rope_theta and
// rope_local_base_freq; nothing in transformers 5's spelling), then rope_scaling or the
// per-layer-type rope_parameters.
void write_gemma3_bases(JsonWriter& w, const ModelConfig& m);
void write_gemma3_rope(JsonWriter& w, const ModelConfig& m);
void write_dtype(JsonWriter& w, const ModelConfig& m);
// Qwen3.5's partial_rotary_factor and RoPE keys as its published configs write them: transformers
// 5's rope_parameters (holding partial_rotary_factor again), or transformers 4's rope_theta and
// rope_scaling.
void write_qwen35_rope(JsonWriter& w, const ModelConfig& m);

}  // namespace remat
