#include "formats/hf_config.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "base/json_writer.h"

namespace remat {

namespace {

// A JSON value as compact text, for error messages.
void write_value(JsonWriter& w, const JsonValue& v) {
  switch (v.type) {
    case JsonValue::Type::null:
      w.null();
      return;
    case JsonValue::Type::boolean:
      w.value(v.boolean);
      return;
    case JsonValue::Type::number:
      w.value(v.number);
      return;
    case JsonValue::Type::string:
      w.value(v.string);
      return;
    case JsonValue::Type::array:
      w.begin_array();
      for (const JsonValue& e : v.array) write_value(w, e);
      w.end_array();
      return;
    case JsonValue::Type::object:
      w.begin_object();
      for (const auto& [k, e] : v.object) {
        w.key(k);
        write_value(w, e);
      }
      w.end_object();
      return;
  }
}

std::string text_of(const JsonValue& v) {
  JsonWriter w;
  write_value(w, v);
  return w.str();
}

[[noreturn]] void refuse(const std::string& key, const JsonValue& value, const std::string& why) {
  throw std::invalid_argument(key + " is " + text_of(value) + "; " + why);
}

// Reads typed keys of one config object. An absent key and a null value both mean "not given".
class Keys {
 public:
  explicit Keys(const JsonValue& config) : config_(config) {}

  const JsonValue* given(const std::string& key) const {
    const JsonValue* v = config_.find(key);
    return v && v->type != JsonValue::Type::null ? v : nullptr;
  }
  std::optional<int> positive_int(const std::string& key) const {
    const JsonValue* v = given(key);
    if (!v) return std::nullopt;
    if (v->type != JsonValue::Type::number || v->number < 1 || v->number > 2147483647.0 ||
        v->number != std::floor(v->number))
      refuse(key, *v, "it must be a positive integer");
    return static_cast<int>(v->number);
  }
  int required_int(const std::string& key) const {
    if (auto v = positive_int(key)) return *v;
    throw std::invalid_argument("config.json has no '" + key + "' (a positive integer)");
  }
  std::optional<double> number(const std::string& key) const {
    const JsonValue* v = given(key);
    if (!v) return std::nullopt;
    if (v->type != JsonValue::Type::number || !(v->number > 0))
      refuse(key, *v, "it must be above 0");
    return v->number;
  }
  bool boolean(const std::string& key, bool absent) const {
    const JsonValue* v = given(key);
    if (!v) return absent;
    if (v->type != JsonValue::Type::boolean) refuse(key, *v, "it must be true or false");
    return v->boolean;
  }
  std::string string(const std::string& key, const std::string& absent) const {
    const JsonValue* v = given(key);
    if (!v) return absent;
    if (v->type != JsonValue::Type::string) refuse(key, *v, "it must be a string");
    return v->string;
  }
  // Refuses `key` unless it is absent or equal to `want`.
  void require_bool(const std::string& key, bool want, bool absent, const std::string& why) const {
    if (boolean(key, absent) != want) refuse(key, *given(key), why);
  }

 private:
  const JsonValue& config_;
};

// Mixture-of-experts keys across transformers' configs: a dense model has none of them (or 0).
void refuse_experts(const Keys& k) {
  for (const char* key : {"num_experts", "num_local_experts", "n_routed_experts",
                          "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts"})
    if (const JsonValue* v = k.given(key);
        v && !(v->type == JsonValue::Type::number && v->number == 0))
      refuse(key, *v, "mixture-of-experts models are not supported");
}

ModelConfig gpt2_from(const Keys& k) {
  ModelConfig m;
  m.layers = k.required_int("n_layer");
  m.dim = k.required_int("n_embd");
  m.heads = k.required_int("n_head");
  m.vocab = k.required_int("vocab_size");
  m.ctx = k.positive_int("n_positions").value_or(k.positive_int("n_ctx").value_or(1024));
  if (auto inner = k.positive_int("n_inner"); inner && *inner != 4 * m.dim)
    refuse("n_inner", *k.given("n_inner"), "remat's GPT-2 MLP is 4 * n_embd wide");
  const std::string act = k.string("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    refuse("activation_function", *k.given("activation_function"),
           "remat's GPT-2 uses the tanh GELU (gelu_new)");
  if (auto eps = k.number("layer_norm_epsilon"); eps && static_cast<float>(*eps) != 1e-5f)
    refuse("layer_norm_epsilon", *k.given("layer_norm_epsilon"),
           "remat's GPT-2 LayerNorm uses 1e-05");
  k.require_bool("tie_word_embeddings", true, true, "remat's GPT-2 ties lm_head to wte");
  k.require_bool("scale_attn_weights", true, true,
                 "remat scales attention scores by 1/sqrt(head size)");
  k.require_bool("scale_attn_by_inverse_layer_idx", false, false,
                 "remat does not scale attention by layer");
  k.require_bool("add_cross_attention", false, false, "remat trains decoder-only models");
  return m;
}

// rope_scaling (transformers 4) or rope_parameters (transformers 5): none or llama3.
RopeScaling rope_scaling_of(const Keys& k, const std::string& key) {
  const JsonValue* v = k.given(key);
  if (!v) return RopeScaling::none;
  if (v->type != JsonValue::Type::object) refuse(key, *v, "it must be an object or null");
  const Keys scaling(*v);
  const std::string type = scaling.string("rope_type", scaling.string("type", "default"));
  if (type == "llama3") return RopeScaling::llama3;
  if (type == "default") return RopeScaling::none;
  refuse(key, *v, "remat implements plain RoPE (and plans Llama 3's 'llama3' scaling)");
}

void refuse_sliding_window(const Keys& k) {
  k.require_bool("use_sliding_window", false, false, "sliding-window attention is not supported");
  if (const JsonValue* types = k.given("layer_types"))
    for (const JsonValue& t : types->array)
      if (t.type != JsonValue::Type::string || t.string != "full_attention")
        refuse("layer_types", *types, "every layer must be full_attention");
}

ModelConfig llama_from(const Keys& k, bool qwen2) {
  ModelConfig m;
  m.arch = Architecture::llama;
  m.layers = k.required_int("num_hidden_layers");
  m.dim = k.required_int("hidden_size");
  m.heads = k.required_int("num_attention_heads");
  m.ffn = k.required_int("intermediate_size");
  m.vocab = k.required_int("vocab_size");
  // Qwen2Config defaults an absent num_key_value_heads to 32, LlamaConfig to the query heads.
  m.kv_heads = k.positive_int("num_key_value_heads").value_or(qwen2 ? 32 : m.heads);
  if (auto hd = k.positive_int("head_dim"); hd && (m.dim % m.heads != 0 || *hd != m.dim / m.heads))
    refuse("head_dim", *k.given("head_dim"),
           "remat needs head_dim = hidden_size / num_attention_heads (" +
               std::to_string(m.dim / m.heads) + ")");
  m.ctx = k.positive_int("max_position_embeddings").value_or(qwen2 ? 32768 : 2048);
  if (const std::string act = k.string("hidden_act", "silu"); act != "silu")
    refuse("hidden_act", *k.given("hidden_act"), "the Llama family here uses silu (SwiGLU)");
  m.norm_eps = static_cast<float>(k.number("rms_norm_eps").value_or(1e-6));
  m.rope_theta = static_cast<float>(k.number("rope_theta").value_or(10000.0));
  m.rope_scaling = rope_scaling_of(k, "rope_scaling");
  if (const JsonValue* p = k.given("rope_parameters")) {
    if (m.rope_scaling == RopeScaling::none) m.rope_scaling = rope_scaling_of(k, "rope_parameters");
    if (auto theta = Keys(*p).number("rope_theta")) m.rope_theta = static_cast<float>(*theta);
  }
  m.tied_head = k.boolean("tie_word_embeddings", false);
  // Qwen2 always has q/k/v biases; Llama's attention_bias would also put one on o_proj.
  m.qkv_bias = qwen2;
  if (!qwen2)
    k.require_bool("attention_bias", false, false,
                   "Llama's attention_bias also biases o_proj, which remat does not implement");
  k.require_bool("mlp_bias", false, false, "remat's SwiGLU MLP has no biases");
  refuse_sliding_window(k);
  return m;
}

// The float's shortest decimal as a double (1e-5f is written 1e-05, not 9.99999974737875e-06).
double decimal(float f) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, f).ptr;
  double d = 0;
  std::from_chars(buf, end, d);
  return d;
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

void write_llama(JsonWriter& w, const ModelConfig& m) {
  if (m.rope_scaling != RopeScaling::none)
    throw std::invalid_argument(
        "config.json cannot be written for rope_scaling 'llama3': remat does not keep its factors");
  const bool qwen2 = m.qkv_bias;
  w.key("architectures").begin_array().value(qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM");
  w.end_array();
  w.field("model_type", qwen2 ? "qwen2" : "llama")
      .field("num_hidden_layers", m.layers)
      .field("hidden_size", m.dim)
      .field("intermediate_size", m.mlp_width())
      .field("num_attention_heads", m.heads)
      .field("num_key_value_heads", m.kv_head_count())
      .field("head_dim", m.head_dim())
      .field("vocab_size", m.vocab)
      .field("max_position_embeddings", m.ctx)
      .field("hidden_act", "silu")
      .field("rms_norm_eps", decimal(m.norm_eps))
      .field("rope_theta", decimal(m.rope_theta))
      .field("rope_scaling", nullptr)
      .field("tie_word_embeddings", m.tied_head);
  if (qwen2)
    w.field("use_sliding_window", false).field("max_window_layers", m.layers);
  else
    w.field("attention_bias", false).field("mlp_bias", false);
}

}  // namespace

ModelConfig model_config_from_hf(const JsonValue& config) {
  if (config.type != JsonValue::Type::object)
    throw std::invalid_argument("config.json must hold a JSON object");
  const Keys k(config);
  const JsonValue* type = k.given("model_type");
  if (!type) throw std::invalid_argument("config.json has no 'model_type'");
  refuse_experts(k);
  ModelConfig m;
  if (type->type == JsonValue::Type::string && type->string == "gpt2")
    m = gpt2_from(k);
  else if (type->type == JsonValue::Type::string &&
           (type->string == "llama" || type->string == "qwen2"))
    m = llama_from(k, type->string == "qwen2");
  else
    refuse("model_type", *type, "remat reads gpt2, llama and qwen2");
  try {
    m.validate();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("config.json describes no valid model: ") + e.what());
  }
  return m;
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
  else
    write_llama(w, model);
  w.field("torch_dtype", "float32").end_object();
  return w.str() + "\n";
}

}  // namespace remat
