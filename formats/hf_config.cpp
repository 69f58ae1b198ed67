#include "formats/hf_config.h"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "base/json_writer.h"
#include "formats/hf_config_keys.h"
#include "formats/hf_qwen35.h"
#include "formats/hf_rope.h"

namespace remat {

namespace {

// Mixture-of-experts keys across transformers' configs: a dense model has none of them (or 0).
void refuse_experts(const ConfigKeys& k) {
  for (const char* key : {"num_experts", "num_local_experts", "n_routed_experts",
                          "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts"})
    if (const JsonValue* v = k.given(key);
        v && !(v->type == JsonValue::Type::number && v->number == 0))
      refuse_key(key, *v, "mixture-of-experts models are not supported");
}

ModelConfig gpt2_from(const ConfigKeys& k) {
  ModelConfig m;
  m.layers = k.required_int("n_layer");
  m.dim = k.required_int("n_embd");
  m.heads = k.required_int("n_head");
  m.vocab = k.required_int("vocab_size");
  m.ctx = k.positive_int("n_positions").value_or(k.positive_int("n_ctx").value_or(1024));
  if (auto inner = k.positive_int("n_inner"); inner && *inner != 4 * m.dim)
    refuse_key("n_inner", *k.given("n_inner"), "remat's GPT-2 MLP is 4 * n_embd wide");
  const std::string act = k.string("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    refuse_key("activation_function", *k.given("activation_function"),
               "remat's GPT-2 uses the tanh GELU (gelu_new)");
  if (auto eps = k.number("layer_norm_epsilon"); eps && static_cast<float>(*eps) != 1e-5f)
    refuse_key("layer_norm_epsilon", *k.given("layer_norm_epsilon"),
               "remat's GPT-2 LayerNorm uses 1e-05");
  k.require_bool("tie_word_embeddings", true, true, "remat's GPT-2 ties lm_head to wte");
  k.require_bool("scale_attn_weights", true, true,
                 "remat scales attention scores by 1/sqrt(head size)");
  k.require_bool("scale_attn_by_inverse_layer_idx", false, false,
                 "remat does not scale attention by layer");
  k.require_bool("add_cross_attention", false, false, "remat trains decoder-only models");
  return m;
}

// Keys of other families that change the computation when set.
void refuse_other_maths(const ConfigKeys& k) {
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"})
    if (const JsonValue* v = k.given(key)) refuse_key(key, *v, "remat does not soft-cap logits");
  if (const JsonValue* v = k.given("partial_rotary_factor");
      v && !(v->type == JsonValue::Type::number && v->number == 1.0))
    refuse_key("partial_rotary_factor", *v, "remat rotates whole heads");
}

void refuse_sliding_window(const ConfigKeys& k) {
  k.require_bool("use_sliding_window", false, false, "sliding-window attention is not supported");
  if (const JsonValue* types = k.given("layer_types"))
    for (const JsonValue& t : types->array)
      if (t.type != JsonValue::Type::string || t.string != "full_attention")
        refuse_key("layer_types", *types, "every layer must be full_attention");
}

// model_type llama, qwen2 (q/k/v biases) or qwen3 (q/k norms, no biases, head_dim 128 unless
// given).
enum class LlamaKind { llama, qwen2, qwen3 };

ModelConfig llama_from(const ConfigKeys& k, LlamaKind kind) {
  const bool qwen = kind != LlamaKind::llama;
  ModelConfig m;
  m.arch = Architecture::llama;
  m.layers = k.required_int("num_hidden_layers");
  m.dim = k.required_int("hidden_size");
  m.heads = k.required_int("num_attention_heads");
  m.ffn = k.required_int("intermediate_size");
  m.vocab = k.required_int("vocab_size");
  // Qwen2Config and Qwen3Config default an absent num_key_value_heads to 32, LlamaConfig to the
  // query heads; Qwen3Config's head_dim defaults to 128, the others' to hidden / heads.
  m.kv_heads = k.positive_int("num_key_value_heads").value_or(qwen ? 32 : m.heads);
  const int head_dim =
      k.positive_int("head_dim")
          .value_or(kind == LlamaKind::qwen3 ? 128 : (m.dim % m.heads == 0 ? m.dim / m.heads : 0));
  if (head_dim == 0)
    throw std::invalid_argument(
        "config.json has no 'head_dim' and num_attention_heads does not "
        "divide hidden_size");
  m.head_size = m.dim % m.heads == 0 && head_dim == m.dim / m.heads ? 0 : head_dim;
  m.ctx = k.positive_int("max_position_embeddings").value_or(qwen ? 32768 : 2048);
  if (const std::string act = k.string("hidden_act", "silu"); act != "silu")
    refuse_key("hidden_act", *k.given("hidden_act"), "the Llama family here uses silu (SwiGLU)");
  m.norm_eps = static_cast<float>(k.number("rms_norm_eps").value_or(1e-6));
  read_llama_rope(k, m);
  m.tied_head = k.boolean("tie_word_embeddings", false);
  // Qwen2 always has q/k/v biases; Llama's and Qwen3's attention_bias would also put one on
  // o_proj.
  m.qkv_bias = kind == LlamaKind::qwen2;
  m.qk_norm = kind == LlamaKind::qwen3;
  if (kind != LlamaKind::qwen2)
    k.require_bool("attention_bias", false, false,
                   "attention_bias also biases o_proj, which remat does not implement");
  k.require_bool("mlp_bias", false, false, "remat's SwiGLU MLP has no biases");
  refuse_sliding_window(k);
  refuse_other_maths(k);
  return m;
}

// Gemma 3's local/global layout: layer_types ("sliding_attention" / "full_attention" per layer)
// when given, else sliding_window_pattern N (layer i global iff (i + 1) % N == 0, transformers'
// default 6). remat keeps the pattern, so a layer_types list of any other shape is refused.
int gemma3_pattern(const ConfigKeys& k, int layers) {
  const JsonValue* types = k.given("layer_types");
  if (!types) {
    if (auto n = k.positive_int("sliding_window_pattern")) return *n;
    return k.positive_int("_sliding_window_pattern").value_or(6);
  }
  if (types->type != JsonValue::Type::array || static_cast<int>(types->array.size()) != layers)
    refuse_key("layer_types", *types, "it must list one type per layer");
  int pattern = layers + 1;  // every layer local unless one is global
  for (int i = 0; i < layers; ++i)
    if (types->array[i].type == JsonValue::Type::string &&
        types->array[i].string == "full_attention") {
      pattern = i + 1;
      break;
    }
  for (int i = 0; i < layers; ++i) {
    const JsonValue& t = types->array[i];
    const char* want = (i + 1) % pattern == 0 ? "full_attention" : "sliding_attention";
    if (t.type != JsonValue::Type::string || t.string != want)
      refuse_key(
          "layer_types", *types,
          "remat places a full_attention layer every N-th layer and sliding_attention between");
  }
  return pattern;
}

// model_type gemma3_text (Gemma3TextConfig; absent keys take its defaults).
ModelConfig gemma3_from(const ConfigKeys& k) {
  ModelConfig m;
  m.arch = Architecture::llama;
  m.gemma3 = true;
  m.qk_norm = true;
  m.tied_head = true;
  m.layers = k.required_int("num_hidden_layers");
  m.dim = k.required_int("hidden_size");
  m.heads = k.required_int("num_attention_heads");
  m.ffn = k.required_int("intermediate_size");
  m.vocab = k.required_int("vocab_size");
  m.kv_heads = k.positive_int("num_key_value_heads").value_or(4);
  const int head_dim = k.positive_int("head_dim").value_or(256);
  m.head_size = m.dim % m.heads == 0 && head_dim == m.dim / m.heads ? 0 : head_dim;
  m.ctx = k.positive_int("max_position_embeddings").value_or(131072);
  for (const char* key : {"hidden_activation", "hidden_act"})
    if (const JsonValue* v = k.given(key);
        v && !(v->type == JsonValue::Type::string && v->string == "gelu_pytorch_tanh"))
      refuse_key(key, *v, "Gemma 3 here uses gelu_pytorch_tanh (GeGLU)");
  m.norm_eps = static_cast<float>(k.number("rms_norm_eps").value_or(1e-6));
  read_gemma3_rope(k, m);
  m.gemma.query_scalar = static_cast<float>(k.number("query_pre_attn_scalar").value_or(256.0));
  m.gemma.sliding_window = k.positive_int("sliding_window").value_or(4096);
  m.gemma.pattern = gemma3_pattern(k, m.layers);
  k.require_bool("tie_word_embeddings", true, true,
                 "remat's Gemma 3 ties lm_head to the embedding");
  k.require_bool("attention_bias", false, false, "remat's Gemma 3 projections have no biases");
  k.require_bool("use_bidirectional_attention", false, false, "remat trains causal attention");
  // transformers drops attention probabilities in training when this is set; remat never does.
  if (const JsonValue* v = k.given("attention_dropout");
      v && !(v->type == JsonValue::Type::number && v->number == 0))
    refuse_key("attention_dropout", *v, "remat's attention has no dropout");
  refuse_other_maths(k);
  return m;
}

void write_gpt2(JsonWriter& w, const ModelConfig& m) {
  w.key("architectures").begin_array().value("GPT2LMHeadModel").end_array();
  w.field("model_type", "gpt2")
      .field("n_layer", m.layers)
      .field("n_embd", m.dim)
      .field("n_head", m.heads)
      .field("n_positions", m.ctx)
      .field("n_ctx", m.ctx)
      .field("vocab_size", m.vocab)
      .field("n_inner", nullptr)
      .field("activation_function", "gelu_new")
      .field("layer_norm_epsilon", 1e-5)
      .field("tie_word_embeddings", true);
}

// The shape fields every Llama-family config.json shares, in transformers' order.
void write_llama_shape(JsonWriter& w, const ModelConfig& m) {
  w.field("num_hidden_layers", m.layers)
      .field("hidden_size", m.dim)
      .field("intermediate_size", m.mlp_width())
      .field("num_attention_heads", m.heads)
      .field("num_key_value_heads", m.kv_head_count())
      .field("head_dim", m.head_dim())
      .field("vocab_size", m.vocab)
      .field("max_position_embeddings", m.ctx);
}

void write_llama(JsonWriter& w, const ModelConfig& m) {
  if (m.qk_norm && m.qkv_bias)
    throw std::invalid_argument(
        "config.json cannot describe q/k norms together with q/k/v biases (Qwen3 has no biases)");
  const bool qwen2 = m.qkv_bias, qwen3 = m.qk_norm;
  w.key("architectures").begin_array();
  w.value(qwen3 ? "Qwen3ForCausalLM" : qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM");
  w.end_array();
  w.field("model_type", qwen3 ? "qwen3" : qwen2 ? "qwen2" : "llama");
  write_llama_shape(w, m);
  w.field("hidden_act", "silu").field("rms_norm_eps", shortest_decimal(m.norm_eps));
  write_llama_rope(w, m);
  w.field("tie_word_embeddings", m.tied_head);
  if (qwen2 || qwen3) w.field("use_sliding_window", false).field("max_window_layers", m.layers);
  if (!qwen2) w.field("attention_bias", false);
  if (!qwen2 && !qwen3) w.field("mlp_bias", false);
}

void write_gemma3(JsonWriter& w, const ModelConfig& m) {
  w.key("architectures").begin_array().value("Gemma3ForCausalLM").end_array();
  w.field("model_type", "gemma3_text");
  write_llama_shape(w, m);
  w.field("hidden_activation", "gelu_pytorch_tanh")
      .field("rms_norm_eps", shortest_decimal(m.norm_eps));
  write_gemma3_bases(w, m);
  w.field("query_pre_attn_scalar", shortest_decimal(m.gemma.query_scalar))
      .field("sliding_window", m.gemma.sliding_window);
  // transformers 5 reads the pattern from layer_types alone and no longer writes it.
  if (m.config_keys.keys == HfKeys::transformers4)
    w.field("sliding_window_pattern", m.gemma.pattern);
  write_gemma3_rope(w, m);
  w.key("layer_types").begin_array();
  for (int i = 0; i < m.layers; ++i)
    w.value(m.global_layer(i) ? "full_attention" : "sliding_attention");
  w.end_array();
  w.field("attn_logit_softcapping", nullptr)
      .field("final_logit_softcapping", nullptr)
      .field("attention_bias", false)
      .field("tie_word_embeddings", true);
}

ModelConfig validated(const ModelConfig& m) {
  try {
    m.validate();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("config.json describes no valid model: ") + e.what());
  }
  return m;
}

// model_type qwen3_5 (Qwen3_5Config): the text model under text_config; the vision tower's keys
// are ignored, remat training the text model alone (formats/hf_qwen35.h).
ModelConfig qwen35_multimodal(const ConfigKeys& outer) {
  const JsonValue* text = outer.given("text_config");
  if (!text) throw std::invalid_argument("config.json of model_type qwen3_5 has no 'text_config'");
  if (text->type != JsonValue::Type::object) outer.refuse("text_config", "it must be an object");
  const ConfigKeys k(*text, "text_config");
  if (const JsonValue* type = k.given("model_type");
      type && !(type->type == JsonValue::Type::string && type->string == "qwen3_5_text"))
    k.refuse("model_type", "a qwen3_5 config's text model is qwen3_5_text");
  ModelConfig m = qwen35_from(k, &outer);
  m.config_keys.keys = qwen35_config_keys(k, &outer);
  return validated(m);
}

}  // namespace

ModelConfig model_config_from_hf(const JsonValue& config) {
  if (config.type != JsonValue::Type::object)
    throw std::invalid_argument("config.json must hold a JSON object");
  const ConfigKeys k(config);
  const JsonValue* type = k.given("model_type");
  if (!type) throw std::invalid_argument("config.json has no 'model_type'");
  refuse_experts(k);
  ModelConfig m;
  if (type->type == JsonValue::Type::string && type->string == "gpt2")
    m = gpt2_from(k);
  else if (type->type == JsonValue::Type::string && type->string == "llama")
    m = llama_from(k, LlamaKind::llama);
  else if (type->type == JsonValue::Type::string && type->string == "qwen2")
    m = llama_from(k, LlamaKind::qwen2);
  else if (type->type == JsonValue::Type::string && type->string == "qwen3")
    m = llama_from(k, LlamaKind::qwen3);
  else if (type->type == JsonValue::Type::string && type->string == "gemma3_text")
    m = gemma3_from(k);
  else if (type->type == JsonValue::Type::string && type->string == "qwen3_5_text")
    m = qwen35_from(k, nullptr);
  else if (type->type == JsonValue::Type::string && type->string == "qwen3_5")
    return qwen35_multimodal(k);
  else
    refuse_key("model_type", *type,
               "remat reads gpt2, llama, qwen2, qwen3, gemma3_text, qwen3_5 and qwen3_5_text");
  m.config_keys.keys = config_keys_of(k);
  return validated(m);
}

ModelConfig model_config_from_hf_json(std::string_view text) {
  return model_config_from_hf(parse_json(text));
}

std::string hf_config_json(const ModelConfig& model) {
  model.validate();
  JsonWriter w(2);
  w.begin_object();
  if (model.arch == Architecture::gpt2)
    write_gpt2(w, model);
  else if (model.gemma3)
    write_gemma3(w, model);
  else if (model.qwen35)
    write_qwen35(w, model);
  else
    write_llama(w, model);
  write_dtype(w, model);
  w.end_object();
  return w.str() + "\n";
}

}  // namespace remat
