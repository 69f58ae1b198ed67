#include "api/model_fields.h"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "api/error_boundary.h"
#include "api/session_params.h"

namespace remat::capi {

namespace {

// A size field: 0 keeps the preset's value, negative values are refused by name.
void override_size(int& field, int32_t value, const char* name) {
  if (value < 0)
    invalid(std::string("params->") + name + " is negative (" + std::to_string(value) + ")");
  if (value != 0) field = value;
}

// Whether the Gemma 3 fields are all 0, as every family but REMAT_FAMILY_GEMMA3 requires.
bool gemma_fields_zero(const remat_session_params& p) {
  return p.sliding_window == 0 && p.sliding_window_pattern == 0 && p.rope_local_theta == 0 &&
         p.query_pre_attn_scalar == 0;
}

// Whether the Qwen3.5 fields are all 0, as every family but REMAT_FAMILY_QWEN35 requires
// (delta_chunk is the step's shape, not the model's: session_config checks it).
bool qwen35_fields_zero(const remat_session_params& p) {
  return p.full_attention_interval == 0 && p.linear_key_heads == 0 && p.linear_value_heads == 0 &&
         p.linear_key_head_dim == 0 && p.linear_value_head_dim == 0 && p.conv_kernel == 0 &&
         p.partial_rotary_factor == 0 && p.mtp_layers == 0 && p.mrope_section[0] == 0 &&
         p.mrope_section[1] == 0 && p.mrope_section[2] == 0 && p.mrope_interleaved == 0;
}

// Whether every family field is 0, as REMAT_FAMILY_PRESET and REMAT_FAMILY_GPT2 require.
bool family_fields_zero(const remat_session_params& p) {
  return p.kv_heads == 0 && p.ffn == 0 && p.head_dim == 0 && p.rope_theta == 0 && p.norm_eps == 0 &&
         p.tied_head == 0 && p.qkv_bias == 0 && p.qk_norm == 0 && p.rope_scaling == 0 &&
         p.rope_factor == 0 && p.rope_low_freq_factor == 0 && p.rope_high_freq_factor == 0 &&
         p.rope_original_ctx == 0 && gemma_fields_zero(p) && qwen35_fields_zero(p);
}

// A double field as the float ModelConfig keeps; 0 is `fallback`.
float float_field(double value, const char* name, float fallback) {
  require_range(std::isfinite(value) && value >= 0, name, value, "finite and at least 0");
  return value == 0 ? fallback : static_cast<float>(value);
}

Llama3Scaling llama3_of(const remat_session_params& p) {
  if (p.rope_scaling == REMAT_ROPE_NONE) {
    if (p.rope_factor != 0 || p.rope_low_freq_factor != 0 || p.rope_high_freq_factor != 0 ||
        p.rope_original_ctx != 0)
      invalid(
          "params->rope_factor, rope_low_freq_factor, rope_high_freq_factor and "
          "rope_original_ctx need params->rope_scaling REMAT_ROPE_LLAMA3");
    return {};
  }
  if (p.rope_scaling != REMAT_ROPE_LLAMA3)
    invalid("params->rope_scaling is " + std::to_string(p.rope_scaling) +
            "; use REMAT_ROPE_NONE or REMAT_ROPE_LLAMA3");
  Llama3Scaling s;
  s.factor = float_field(p.rope_factor, "rope_factor", 0.0f);
  s.low_freq_factor = float_field(p.rope_low_freq_factor, "rope_low_freq_factor", 0.0f);
  s.high_freq_factor = float_field(p.rope_high_freq_factor, "rope_high_freq_factor", 0.0f);
  s.original_ctx = p.rope_original_ctx;
  return s;
}

// The family fields of `m` as the struct's REMAT_FAMILY_LLAMA reads them (ModelConfig::validate
// then checks sizes and combinations).
void set_llama_fields(ModelConfig& m, const remat_session_params& p) {
  const ModelConfig gpt2;  // the defaults a 0 field stands for
  m.arch = Architecture::llama;
  override_size(m.kv_heads = 0, p.kv_heads, "kv_heads");
  override_size(m.ffn = 0, p.ffn, "ffn");
  override_size(m.head_size = 0, p.head_dim, "head_dim");
  m.rope_theta = float_field(p.rope_theta, "rope_theta", gpt2.rope_theta);
  m.norm_eps = float_field(p.norm_eps, "norm_eps", gpt2.norm_eps);
  m.tied_head = p.tied_head != 0;
  m.qkv_bias = p.qkv_bias != 0;
  m.qk_norm = p.qk_norm != 0;
  m.llama3 = llama3_of(p);
  m.rope_scaling = p.rope_scaling == REMAT_ROPE_LLAMA3 ? RopeScaling::llama3 : RopeScaling::none;
}

// Gemma 3: the Llama family's fields with q/k norms and a tied head, and its own four.
void set_gemma3_fields(ModelConfig& m, const remat_session_params& p) {
  remat_session_params llama = p;  // Gemma's linear RoPE scaling is not the Llama family's
  if (p.rope_scaling == REMAT_ROPE_LINEAR) llama.rope_scaling = 0, llama.rope_factor = 0;
  set_llama_fields(m, llama);
  if (p.rope_scaling == REMAT_ROPE_LINEAR) {
    require_range(p.rope_factor > 0 && std::isfinite(p.rope_factor), "rope_factor", p.rope_factor,
                  "positive with REMAT_ROPE_LINEAR");
    m.gemma.rope_linear = static_cast<float>(p.rope_factor);
  }
  m.gemma3 = true;
  m.qk_norm = true;
  m.tied_head = true;
  override_size(m.gemma.sliding_window = 0, p.sliding_window, "sliding_window");
  override_size(m.gemma.pattern = 0, p.sliding_window_pattern, "sliding_window_pattern");
  m.gemma.local_rope_theta = float_field(p.rope_local_theta, "rope_local_theta", 10000.0f);
  m.gemma.query_scalar = float_field(p.query_pre_attn_scalar, "query_pre_attn_scalar",
                                     static_cast<float>(m.head_dim()));
}

// A Qwen3.5 size every Qwen3.5 model states (config.json's defaults are its 0.8B's, not a rule).
int qwen35_size(int32_t value, const char* name) {
  if (value <= 0)
    invalid(std::string("params->") + name + " is " + std::to_string(value) +
            "; REMAT_FAMILY_QWEN35 needs it positive");
  return value;
}

// Qwen3.5: the Llama family's fields (q/k norms implied, no biases, plain RoPE) for its full
// attention layers, and the Gated DeltaNet layers' own.
void set_qwen35_fields(ModelConfig& m, const remat_session_params& p) {
  if (p.qkv_bias != 0 || p.rope_scaling != REMAT_ROPE_NONE)
    invalid(
        "params->family is REMAT_FAMILY_QWEN35: qkv_bias must be 0 and rope_scaling "
        "REMAT_ROPE_NONE (Qwen3.5 has neither)");
  set_llama_fields(m, p);
  m.qwen35 = true;
  m.qk_norm = true;
  Qwen35Layers& q = m.qwen35_layers;
  q.full_attention_interval = qwen35_size(p.full_attention_interval, "full_attention_interval");
  q.linear_key_heads = qwen35_size(p.linear_key_heads, "linear_key_heads");
  q.linear_value_heads = qwen35_size(p.linear_value_heads, "linear_value_heads");
  q.linear_key_head_dim = qwen35_size(p.linear_key_head_dim, "linear_key_head_dim");
  q.linear_value_head_dim = qwen35_size(p.linear_value_head_dim, "linear_value_head_dim");
  q.conv_kernel = qwen35_size(p.conv_kernel, "conv_kernel");
  if (q.linear_value_heads % q.linear_key_heads != 0)
    invalid("params->linear_key_heads (" + std::to_string(q.linear_key_heads) +
            ") must divide params->linear_value_heads (" + std::to_string(q.linear_value_heads) +
            ")");
  require_range(std::isfinite(p.partial_rotary_factor) && p.partial_rotary_factor > 0 &&
                    p.partial_rotary_factor <= 1,
                "partial_rotary_factor", p.partial_rotary_factor, "in (0, 1]");
  q.partial_rotary = static_cast<float>(p.partial_rotary_factor);
  if (p.mtp_layers < 0)
    invalid("params->mtp_layers is negative (" + std::to_string(p.mtp_layers) + ")");
  q.mtp_layers = p.mtp_layers;
  for (int i = 0; i < 3; ++i) {
    if (p.mrope_section[i] < 0)
      invalid("params->mrope_section[" + std::to_string(i) + "] is negative (" +
              std::to_string(p.mrope_section[i]) + ")");
    q.mrope_section[i] = p.mrope_section[i];
  }
  // All 0: every rotated frequency in the first (temporal) section, which text alone reads.
  if (q.mrope_section == std::array<int, 3>{}) q.mrope_section[0] = m.rotary_dims() / 2;
  q.mrope_interleaved = p.mrope_interleaved != 0;
}

// How a saved folder's config.json is spelled (formats/hf_rope.h).
HfKeys config_keys_of(const remat_session_params& p) {
  if (p.config_keys != REMAT_CONFIG_KEYS_TRANSFORMERS4 &&
      p.config_keys != REMAT_CONFIG_KEYS_TRANSFORMERS5)
    invalid("params->config_keys is " + std::to_string(p.config_keys) +
            "; use REMAT_CONFIG_KEYS_TRANSFORMERS4 or REMAT_CONFIG_KEYS_TRANSFORMERS5");
  return p.config_keys == REMAT_CONFIG_KEYS_TRANSFORMERS5 ? HfKeys::transformers5
                                                          : HfKeys::transformers4;
}

// Fields of another family under `family` (named), refused in one line.
void require_zero(bool zero, const char* family, const char* fields) {
  if (!zero) invalid(std::string("params->family is ") + family + ": the " + fields + " must be 0");
}

}  // namespace

ModelConfig model_of(const remat_session_params& p) {
  ModelConfig m = p.model ? ModelConfig::preset(p.model) : ModelConfig{0, 0, 0, 0, 0};
  override_size(m.layers, p.layers, "layers");
  override_size(m.dim, p.dim, "dim");
  override_size(m.heads, p.heads, "heads");
  override_size(m.vocab, p.vocab, "vocab");
  override_size(m.ctx, p.ctx, "ctx");
  const char* const gemma = "Gemma 3 fields (sliding_window ... query_pre_attn_scalar)";
  const char* const qwen35 = "Qwen3.5 fields (full_attention_interval ... mrope_interleaved)";
  if (p.family != REMAT_FAMILY_PRESET)  // the family's fields alone, whatever the preset's were
    m = ModelConfig{m.layers, m.dim, m.heads, m.vocab, m.ctx};
  switch (p.family) {
    case REMAT_FAMILY_PRESET:
      require_zero(family_fields_zero(p), "REMAT_FAMILY_PRESET",
                   "family fields (kv_heads ... mrope_interleaved)");
      break;
    case REMAT_FAMILY_GPT2:
      require_zero(family_fields_zero(p), "REMAT_FAMILY_GPT2",
                   "family fields (kv_heads ... mrope_interleaved)");
      break;
    case REMAT_FAMILY_LLAMA:
      require_zero(gemma_fields_zero(p), "REMAT_FAMILY_LLAMA", gemma);
      require_zero(qwen35_fields_zero(p), "REMAT_FAMILY_LLAMA", qwen35);
      set_llama_fields(m, p);
      break;
    case REMAT_FAMILY_GEMMA3:
      require_zero(qwen35_fields_zero(p), "REMAT_FAMILY_GEMMA3", qwen35);
      set_gemma3_fields(m, p);
      break;
    case REMAT_FAMILY_QWEN35:
      require_zero(gemma_fields_zero(p), "REMAT_FAMILY_QWEN35", gemma);
      set_qwen35_fields(m, p);
      break;
    default:
      invalid("params->family is " + std::to_string(p.family) +
              "; use REMAT_FAMILY_PRESET, REMAT_FAMILY_GPT2, REMAT_FAMILY_LLAMA, "
              "REMAT_FAMILY_GEMMA3 or REMAT_FAMILY_QWEN35");
  }
  m.validate();
  m.config_keys.keys = config_keys_of(p);
  return m;
}

namespace {

// Refuses `m` where a struct of `size` bytes ends before the fields that describe it.
void require_describable(std::size_t size, const ModelConfig& m, const std::string& origin) {
  if (size <= offsetof(remat_session_params, family) && m.arch != Architecture::gpt2)
    invalid(origin + " holds a " + std::string(architecture_name(m.arch)) +
            "-family model; a remat_session_params that ends before `family` describes GPT-2 "
            "models only");
  if (size <= offsetof(remat_session_params, sliding_window) && m.gemma3)
    invalid(origin +
            " holds a Gemma 3 model; a remat_session_params that ends before "
            "`sliding_window` cannot describe it");
  if (size <= offsetof(remat_session_params, full_attention_interval) && m.qwen35)
    invalid(origin +
            " holds a Qwen3.5 model; a remat_session_params that ends before "
            "`full_attention_interval` cannot describe it (name a Qwen3.5 preset in `model`)");
}

void set_qwen35_fields(remat_session_params& p, const ModelConfig& m) {
  const Qwen35Layers q = m.qwen35 ? m.qwen35_layers : Qwen35Layers{};
  p.full_attention_interval = q.full_attention_interval;
  p.linear_key_heads = q.linear_key_heads;
  p.linear_value_heads = q.linear_value_heads;
  p.linear_key_head_dim = q.linear_key_head_dim;
  p.linear_value_head_dim = q.linear_value_head_dim;
  p.conv_kernel = q.conv_kernel;
  p.partial_rotary_factor = q.partial_rotary;
  p.mtp_layers = q.mtp_layers;
  for (int i = 0; i < 3; ++i) p.mrope_section[i] = q.mrope_section[i];
  p.mrope_interleaved = q.mrope_interleaved ? 1 : 0;
}

}  // namespace

void set_model(remat_session_params& params, const ModelConfig& m, const std::string& origin) {
  // An older struct is read and written up to its own size only; it lacks the later families.
  const std::size_t size = params.struct_size;
  require_describable(size, m, origin);
  remat_session_params p = read_params(&params);
  p.model = nullptr;
  p.layers = m.layers;
  p.dim = m.dim;
  p.heads = m.heads;
  p.vocab = m.vocab;
  p.ctx = m.ctx;
  const bool llama = m.arch == Architecture::llama;
  p.family = m.gemma3   ? REMAT_FAMILY_GEMMA3
             : m.qwen35 ? REMAT_FAMILY_QWEN35
             : llama    ? REMAT_FAMILY_LLAMA
                        : REMAT_FAMILY_GPT2;
  p.kv_heads = llama ? m.kv_heads : 0;
  p.ffn = llama ? m.ffn : 0;
  p.head_dim = llama ? m.head_size : 0;
  p.rope_theta = llama ? m.rope_theta : 0.0;
  p.norm_eps = llama ? m.norm_eps : 0.0;
  p.tied_head = llama && m.tied_head;
  p.qkv_bias = llama && m.qkv_bias;
  p.qk_norm = llama && m.qk_norm;
  const bool llama3 = llama && m.rope_scaling == RopeScaling::llama3;
  const bool linear = m.gemma3 && m.gemma.rope_linear != 0.0f;
  p.rope_scaling = llama3 ? REMAT_ROPE_LLAMA3 : linear ? REMAT_ROPE_LINEAR : REMAT_ROPE_NONE;
  p.rope_factor = llama3 ? m.llama3.factor : linear ? m.gemma.rope_linear : 0.0;
  p.rope_low_freq_factor = llama3 ? m.llama3.low_freq_factor : 0.0;
  p.rope_high_freq_factor = llama3 ? m.llama3.high_freq_factor : 0.0;
  p.rope_original_ctx = llama3 ? m.llama3.original_ctx : 0;
  p.sliding_window = m.gemma3 ? m.gemma.sliding_window : 0;
  p.sliding_window_pattern = m.gemma3 ? m.gemma.pattern : 0;
  p.rope_local_theta = m.gemma3 ? m.gemma.local_rope_theta : 0.0;
  p.query_pre_attn_scalar = m.gemma3 ? m.gemma.query_scalar : 0.0;
  set_qwen35_fields(p, m);
  // Written only into a struct that has it (the copy below stops at the struct's size).
  p.config_keys = m.config_keys.keys == HfKeys::transformers5 ? REMAT_CONFIG_KEYS_TRANSFORMERS5
                                                              : REMAT_CONFIG_KEYS_TRANSFORMERS4;
  // Every model remat builds has a description; the check guards that promise.
  if (!(model_of(p) == m))
    invalid(origin + " holds a model remat_session_params does not describe exactly");
  p.struct_size = size;
  std::memcpy(&params, &p, size);
}

}  // namespace remat::capi
