#include "graph/model_config.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "graph/delta_rule_workspace.h"

namespace remat {

std::string_view architecture_name(Architecture a) {
  return a == Architecture::gpt2 ? "gpt2" : "llama";
}

namespace {

// Llama-family shape from Hugging Face config.json values.
ModelConfig llama(int layers, int dim, int heads, int kv_heads, int ffn, int vocab, int ctx,
                  float theta, float eps, bool tied, bool qkv_bias) {
  ModelConfig m{layers, dim, heads, vocab, ctx};
  m.arch = Architecture::llama;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.rope_theta = theta;
  m.norm_eps = eps;
  m.tied_head = tied;
  m.qkv_bias = qkv_bias;
  return m;
}

// Llama 3.2 (meta-llama/Llama-3.2-1B and -3B config.json): tied, llama3 RoPE scaling 32/1/4/8192.
ModelConfig llama32(int layers, int dim, int heads) {
  ModelConfig m = llama(layers, dim, heads, 8, 8192, 128256, 131072, 500000.0f, 1e-5f, true, false);
  m.rope_scaling = RopeScaling::llama3;
  m.llama3 = {32.0f, 1.0f, 4.0f, 8192};
  return m;
}

// Qwen3 (Qwen/Qwen3-0.6B and -1.7B config.json): tied, head_dim 128 whatever the width, q/k norms.
ModelConfig qwen3(int dim, int ffn) {
  ModelConfig m = llama(28, dim, 16, 8, ffn, 151936, 40960, 1000000.0f, 1e-6f, true, false);
  m.head_size = dim / 16 == 128 ? 0 : 128;  // 0: the default dim / heads
  m.qk_norm = true;
  return m;
}

// Gemma 3 (google/gemma-3-270m and gemma-3-1b-pt config.json): tied, 4 heads of 256 on 1 KV
// head, every sixth layer global, local windows of 512.
ModelConfig gemma3_preset(int layers, int dim, int ffn) {
  ModelConfig m = llama(layers, dim, 4, 1, ffn, 262144, 32768, 1000000.0f, 1e-6f, true, false);
  m.head_size = 256;
  m.qk_norm = true;
  m.gemma3 = true;
  m.gemma = {512, 6, 10000.0f, 256.0f};
  return m;
}

// Qwen3.5's text_config: tied, 24 layers with every fourth gated full attention (8 heads of 256 on
// 2 KV heads, a quarter of each head rotated), the others Gated DeltaNet with 16 key and 16 value
// heads of 128 and a 4-tap conv1d; one MTP layer; 248320 tokens, 262144 positions (Qwen/
// Qwen3.5-0.8B's config.json at revision 2fc0636, as quoted by others: no copy of the file itself
// was at hand). RoPE base 1e7 and the [11, 11, 10] split are the family's (Qwen3.5-27B's published
// config.json). Qwen3.5-2B: 2048 wide (llama.cpp's qwen35 loader tells the two apart by width);
// its MLP width 6144 and the linear heads are taken to follow the 0.8B's, unconfirmed.
ModelConfig qwen35_preset(int dim, int ffn) {
  ModelConfig m = llama(24, dim, 8, 2, ffn, 248320, 262144, 10000000.0f, 1e-6f, true, false);
  m.head_size = dim / 8 == 256 ? 0 : 256;  // 0: the default dim / heads
  m.qk_norm = true;
  m.qwen35 = true;
  m.qwen35_layers = {4, 16, 16, 128, 128, 4, 0.25f, 1, {11, 11, 10}, true};
  return m;
}

}  // namespace

const std::vector<std::string_view>& ModelConfig::preset_names() {
  static const std::vector<std::string_view> names = {
      "tiny",         "gpt2",         "gpt2-medium",  "gpt2-large",   "gpt2-xl",
      "llama-tiny",   "smollm2-135m", "smollm2-360m", "qwen2.5-0.5b", "llama3.2-1b",
      "llama3.2-3b",  "qwen3-0.6b",   "qwen3-1.7b",   "gemma3-270m",  "gemma3-1b",
      "qwen3.5-0.8b", "qwen3.5-2b",   "qwen3.5-tiny"};
  return names;
}

ModelConfig ModelConfig::preset(std::string_view name) {
  // Published GPT-2 shapes (Radford et al. 2019; Hugging Face configs).
  if (name == "tiny") return {4, 128, 4, 256, 64};
  if (name == "gpt2") return {12, 768, 12, 50257, 1024};
  if (name == "gpt2-medium") return {24, 1024, 16, 50257, 1024};
  if (name == "gpt2-large") return {36, 1280, 20, 50257, 1024};
  if (name == "gpt2-xl") return {48, 1600, 25, 50257, 1024};
  // A small Llama-family model for the README and tests (untied, 2 KV heads for 4 query heads).
  if (name == "llama-tiny")
    return llama(4, 128, 4, 2, 352, 256, 256, 10000.0f, 1e-5f, false, false);
  // The Hugging Face config.json files of HuggingFaceTB/SmolLM2-135M and -360M, Qwen/Qwen2.5-0.5B,
  // and (through llama32() and qwen3() above) Llama 3.2 and Qwen3.
  if (name == "smollm2-135m")
    return llama(30, 576, 9, 3, 1536, 49152, 8192, 100000.0f, 1e-5f, true, false);
  if (name == "smollm2-360m")
    return llama(32, 960, 15, 5, 2560, 49152, 8192, 100000.0f, 1e-5f, true, false);
  if (name == "qwen2.5-0.5b")
    return llama(24, 896, 14, 2, 4864, 151936, 32768, 1000000.0f, 1e-6f, true, true);
  if (name == "llama3.2-1b") return llama32(16, 2048, 32);
  if (name == "llama3.2-3b") return llama32(28, 3072, 24);
  if (name == "qwen3-0.6b") return qwen3(1024, 3072);
  if (name == "qwen3-1.7b") return qwen3(2048, 6144);
  if (name == "gemma3-270m") return gemma3_preset(18, 640, 2048);
  if (name == "gemma3-1b") return gemma3_preset(26, 1152, 6912);
  if (name == "qwen3.5-0.8b") return qwen35_preset(1024, 3584);
  if (name == "qwen3.5-2b") return qwen35_preset(2048, 6144);
  // A small Qwen3.5 for the README and tests, byte vocabulary like `tiny`: three Gated DeltaNet
  // layers (2 key heads shared by 4 value heads of 16) then one gated attention layer.
  if (name == "qwen3.5-tiny") {
    ModelConfig m = llama(4, 64, 2, 1, 128, 256, 256, 10000000.0f, 1e-6f, true, false);
    m.qk_norm = true;
    m.qwen35 = true;
    m.qwen35_layers = {4, 2, 4, 16, 16, 4, 0.25f, 0, {2, 1, 1}, true};
    return m;
  }
  std::string list;
  for (std::string_view n : preset_names()) list += (list.empty() ? "" : ", ") + std::string(n);
  throw std::invalid_argument("unknown model '" + std::string(name) + "'; use one of " + list);
}

std::string_view ModelConfig::name() const {
  for (std::string_view preset : preset_names())
    if (ModelConfig::preset(preset) == *this) return preset;
  return "custom";
}

void ModelConfig::validate() const {
  auto positive = [](int v, const char* what) {
    if (v <= 0)
      throw std::invalid_argument(std::string(what) + " must be positive, got " +
                                  std::to_string(v));
  };
  positive(layers, "layers");
  positive(dim, "dim");
  positive(heads, "heads");
  positive(vocab, "vocab");
  positive(ctx, "ctx");
  if (head_size < 0) throw std::invalid_argument("head_size must not be negative");
  if (head_size == 0 && dim % heads != 0)
    throw std::invalid_argument("heads (" + std::to_string(heads) + ") must divide dim (" +
                                std::to_string(dim) + ")");
  if (kv_heads < 0 || ffn < 0) throw std::invalid_argument("kv_heads and ffn must not be negative");
  if (heads % kv_head_count() != 0)
    throw std::invalid_argument("kv_heads (" + std::to_string(kv_head_count()) +
                                ") must divide heads (" + std::to_string(heads) + ")");
  if (arch == Architecture::gpt2) {
    if (kv_head_count() != heads || mlp_width() != 4 * dim || !tied_head || qkv_bias ||
        rope_scaling != RopeScaling::none || head_size != 0 || qk_norm || gemma3 || qwen35)
      throw std::invalid_argument(
          "gpt2 models have kv_heads = heads, head size dim/heads, an MLP 4*dim wide and a tied "
          "head");
    return;
  }
  if (head_dim() % 2 != 0)
    throw std::invalid_argument("head size (" + std::to_string(head_dim()) +
                                ") must be even for RoPE");
  if (!(rope_theta > 0.0f)) throw std::invalid_argument("rope_theta must be positive");
  if (!(norm_eps > 0.0f)) throw std::invalid_argument("rms_norm_eps must be positive");
  validate_llama3();
  validate_gemma3();
  validate_qwen35();
}

int ModelConfig::rotary_dims() const {
  if (!qwen35) return head_dim();
  return static_cast<int>(static_cast<float>(head_dim()) * qwen35_layers.partial_rotary);
}

void ModelConfig::validate_qwen35() const {
  const Qwen35Layers& q = qwen35_layers;
  if (!qwen35) {
    if (q != Qwen35Layers{})
      throw std::invalid_argument("Qwen3.5 layer settings are set on a model that is not qwen35");
    return;
  }
  if (!qk_norm || qkv_bias || gemma3 || rope_scaling != RopeScaling::none)
    throw std::invalid_argument(
        "qwen35 models have q/k norms, no q/k/v biases and no llama3 RoPE scaling");
  const auto positive = [](int v, const char* what) {
    if (v <= 0)
      throw std::invalid_argument(std::string("qwen35 needs a positive ") + what + ", got " +
                                  std::to_string(v));
  };
  positive(q.full_attention_interval, "full_attention_interval");
  positive(q.linear_key_heads, "linear_num_key_heads");
  positive(q.linear_value_heads, "linear_num_value_heads");
  positive(q.linear_key_head_dim, "linear_key_head_dim");
  positive(q.linear_value_head_dim, "linear_value_head_dim");
  positive(q.conv_kernel, "linear_conv_kernel_dim");
  if (q.linear_value_heads % q.linear_key_heads != 0)
    throw std::invalid_argument("linear_num_key_heads (" + std::to_string(q.linear_key_heads) +
                                ") must divide linear_num_value_heads (" +
                                std::to_string(q.linear_value_heads) + ")");
  if (!(q.partial_rotary > 0.0f && q.partial_rotary <= 1.0f))
    throw std::invalid_argument("partial_rotary_factor must be in (0, 1], got " +
                                std::to_string(q.partial_rotary));
  if (rotary_dims() < 2 || rotary_dims() % 2 != 0)
    throw std::invalid_argument("head_dim * partial_rotary_factor (" +
                                std::to_string(rotary_dims()) + ") must be even and at least 2");
  if (q.mtp_layers < 0) throw std::invalid_argument("mtp_num_hidden_layers must not be negative");
  int sections = 0;
  for (int s : q.mrope_section) {
    if (s < 0) throw std::invalid_argument("mrope_section entries must not be negative");
    sections += s;
  }
  if (sections != rotary_dims() / 2)
    throw std::invalid_argument("mrope_section sums to " + std::to_string(sections) +
                                " frequencies; the rotated channels have " +
                                std::to_string(rotary_dims() / 2));
}

void ModelConfig::validate_gemma3() const {
  if (!gemma3) {
    if (gemma != Gemma3Layers{})
      throw std::invalid_argument("Gemma 3 layer settings are set on a model that is not gemma3");
    return;
  }
  if (!qk_norm || !tied_head || qkv_bias || rope_scaling != RopeScaling::none)
    throw std::invalid_argument(
        "gemma3 models have q/k norms, a tied head, no q/k/v biases and no llama3 RoPE scaling");
  if (gemma.sliding_window <= 0 || gemma.pattern <= 0)
    throw std::invalid_argument("gemma3 needs a positive sliding_window and layer pattern, got " +
                                std::to_string(gemma.sliding_window) + " and " +
                                std::to_string(gemma.pattern));
  if (!(gemma.local_rope_theta > 0.0f) || !(gemma.query_scalar > 0.0f) ||
      !std::isfinite(gemma.query_scalar))
    throw std::invalid_argument(
        "gemma3 needs a positive rope_local_base_freq and query_pre_attn_scalar");
  if (!(gemma.rope_linear == 0.0f || gemma.rope_linear > 0.0f) || !std::isfinite(gemma.rope_linear))
    throw std::invalid_argument("gemma3's linear RoPE factor must be positive, or 0 for none");
}

void ModelConfig::validate_llama3() const {
  const Llama3Scaling& s = llama3;
  if (rope_scaling == RopeScaling::none) {
    if (s != Llama3Scaling{})
      throw std::invalid_argument("llama3 RoPE factors are set but rope_scaling is none");
    return;
  }
  if (!(s.factor >= 1.0f) || !std::isfinite(s.factor))
    throw std::invalid_argument("rope_scaling factor must be at least 1, got " +
                                std::to_string(s.factor));
  if (!(s.low_freq_factor > 0.0f && s.low_freq_factor < s.high_freq_factor) ||
      !std::isfinite(s.high_freq_factor))
    throw std::invalid_argument("rope_scaling needs 0 < low_freq_factor < high_freq_factor, got " +
                                std::to_string(s.low_freq_factor) + " and " +
                                std::to_string(s.high_freq_factor));
  if (s.original_ctx <= 0)
    throw std::invalid_argument("rope_scaling original_max_position_embeddings must be positive");
}

uint64_t ModelConfig::parameter_count() const {
  const uint64_t c = static_cast<uint64_t>(dim);
  const uint64_t v = static_cast<uint64_t>(vocab);
  const uint64_t f = static_cast<uint64_t>(mlp_width());
  if (arch == Architecture::gpt2) {
    const uint64_t per_block =
        2 * c + (c * 3 * c + 3 * c) + (c * c + c) + 2 * c + (c * f + f) + (f * c + c);
    return v * c + static_cast<uint64_t>(ctx) * c + static_cast<uint64_t>(layers) * per_block +
           2 * c;
  }
  if (qwen35) return qwen35_parameter_count();
  const uint64_t q = static_cast<uint64_t>(heads) * head_dim();
  const uint64_t kv = static_cast<uint64_t>(kv_head_count()) * head_dim();
  const uint64_t attention = c * q + 2 * c * kv + q * c + (qkv_bias ? q + 2 * kv : 0) +
                             (qk_norm ? 2 * static_cast<uint64_t>(head_dim()) : 0);
  const uint64_t norms = (gemma3 ? 4 : 2) * c;  // Gemma: a norm after attention and the MLP too
  const uint64_t per_block = norms + attention + 3 * c * f;
  return v * c + static_cast<uint64_t>(layers) * per_block + c + (tied_head ? 0 : v * c);
}

// Qwen3.5 without its MTP layers: each layer's two norms and MLP, then either gated full
// attention (q_proj twice as tall for the gate, q/k norms) or Gated DeltaNet (in_proj_qkv,
// in_proj_z, in_proj_b, in_proj_a, conv1d, dt_bias, A_log, the gated norm, out_proj).
uint64_t ModelConfig::qwen35_parameter_count() const {
  const uint64_t c = static_cast<uint64_t>(dim), d = static_cast<uint64_t>(head_dim());
  const uint64_t q = static_cast<uint64_t>(heads) * d;
  const uint64_t kv = static_cast<uint64_t>(kv_head_count()) * d;
  const Qwen35Layers& l = qwen35_layers;
  const uint64_t nv = static_cast<uint64_t>(l.linear_value_heads);
  const uint64_t key = static_cast<uint64_t>(l.linear_key_heads) * l.linear_key_head_dim;
  const uint64_t value = nv * l.linear_value_head_dim;
  const uint64_t full = c * 2 * q + 2 * c * kv + q * c + 2 * d;
  const uint64_t linear = c * (2 * key + value) + c * value + 2 * c * nv +
                          (2 * key + value) * l.conv_kernel + 2 * nv + l.linear_value_head_dim +
                          value * c;
  const uint64_t common = 2 * c + 3 * c * static_cast<uint64_t>(mlp_width());
  uint64_t total = static_cast<uint64_t>(vocab) * c + c + (tied_head ? 0 : vocab * c);
  for (int i = 0; i < layers; ++i) total += common + (linear_attention_layer(i) ? linear : full);
  return total;
}

void TrainShape::validate(const ModelConfig& model) const {
  if (batch <= 0)
    throw std::invalid_argument("batch must be positive, got " + std::to_string(batch));
  if (seq <= 0) throw std::invalid_argument("seq must be positive, got " + std::to_string(seq));
  if (seq > model.ctx)
    throw std::invalid_argument("seq (" + std::to_string(seq) + ") must be at most ctx (" +
                                std::to_string(model.ctx) + ")");
  if (!(dropout >= 0.0f && dropout < 1.0f))
    throw std::invalid_argument("dropout must be in [0, 1), got " + std::to_string(dropout));
  if (delta_chunk < 0 || (model.qwen35 && *delta_chunk_refusal(delta_chunk) != '\0'))
    throw std::invalid_argument("delta chunk " + std::string(delta_chunk_refusal(delta_chunk)) +
                                ", got " + std::to_string(delta_chunk));
  if (model.arch == Architecture::llama && dropout != 0.0f)
    throw std::invalid_argument("the Llama family has no dropout; use --dropout 0");
  if (loss_chunk < 0 || (loss_chunk % kLossChunkAlign != 0 && loss_chunk < batch * seq))
    throw std::invalid_argument("loss chunk must be 0 (whole logits), a multiple of " +
                                std::to_string(kLossChunkAlign) + " rows, or at least B*T (" +
                                std::to_string(batch * seq) + "); got " +
                                std::to_string(loss_chunk));
}

}  // namespace remat
