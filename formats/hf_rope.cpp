#include "formats/hf_rope.h"

#include <array>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

namespace remat {

namespace {

bool spelled_v5(const ModelConfig& m) {
  return m.config_keys.keys == HfKeys::transformers5;
}

// transformers still reads the older "type" where "rope_type" is absent (standardize_rope_params).
std::string rope_type_of(const ConfigKeys& rope) {
  return rope.string("rope_type", rope.string("type", "default"));
}

// The RoPE object under `key`, or nullptr when absent or null.
const JsonValue* rope_object(const ConfigKeys& k, const std::string& key) {
  const JsonValue* v = k.given(key);
  if (v && v->type != JsonValue::Type::object) k.refuse(key, "it must be an object or null");
  return v;
}

// transformers 5 moves partial_rotary_factor into the RoPE object (convert_rope_params_to_dict).
void refuse_partial_rotary(const ConfigKeys& rope) {
  if (const JsonValue* v = rope.given("partial_rotary_factor");
      v && !(v->type == JsonValue::Type::number && v->number == 1.0))
    rope.refuse("partial_rotary_factor", "remat rotates whole heads");
}

[[noreturn]] void missing(const ConfigKeys& rope, const std::string& type, const char* key) {
  throw std::invalid_argument(rope.prefix() + " of rope_type " + type + " has no '" + key +
                              "' (a positive number)");
}

// original_max_position_embeddings of a llama3 object. transformers 4 requires it in the object;
// transformers 5's standardize_rope_params takes a top-level one, else max_position_embeddings,
// where the object has none (`fallback`). A top-level value that disagrees with the object's is
// refused rather than guessed between.
int llama3_original_ctx(const ConfigKeys& rope, const ConfigKeys& config,
                        std::optional<int> fallback) {
  const char* key = "original_max_position_embeddings";
  const JsonValue* v = rope.given(key);
  if (v && (v->type != JsonValue::Type::number || v->number < 1 || v->number > 2147483647.0 ||
            v->number != std::floor(v->number)))
    rope.refuse(key, "it must be a positive integer");
  if (!fallback) {
    if (!v) missing(rope, "llama3", key);
    return static_cast<int>(v->number);
  }
  const std::optional<int> top = config.positive_int(key);
  if (v && top && *top != static_cast<int>(v->number))
    config.refuse(key, "it differs from " + rope.name(key));
  return v ? static_cast<int>(v->number) : top.value_or(*fallback);
}

// The llama3 factors of a RoPE object, each required (_compute_llama3_parameters reads all four).
Llama3Scaling llama3_factors(const ConfigKeys& rope, const ConfigKeys& config,
                             std::optional<int> fallback_ctx) {
  const auto need = [&](const char* key) {
    if (auto v = rope.number(key)) return static_cast<float>(*v);
    missing(rope, "llama3", key);
  };
  Llama3Scaling s;
  s.factor = need("factor");
  s.low_freq_factor = need("low_freq_factor");
  s.high_freq_factor = need("high_freq_factor");
  s.original_ctx = llama3_original_ctx(rope, config, fallback_ctx);
  return s;
}

// A Gemma 3 global layers' RoPE object: default (0: no scaling) or linear with its factor.
float linear_factor(const ConfigKeys& rope) {
  const std::string type = rope_type_of(rope);
  if (type == "default") return 0.0f;
  if (type != "linear")
    refuse_key(rope.prefix(), rope.object(),
               "remat's Gemma 3 implements no scaling or rope_type linear");
  if (auto f = rope.number("factor")) return static_cast<float>(*f);
  missing(rope, "linear", "factor");
}

// Gemma 3's rope_parameters: exactly the layer types' objects, nothing else.
void check_layer_type_keys(const ConfigKeys& k, const JsonValue& params) {
  for (const auto& [key, value] : params.object)
    if (key != "full_attention" && key != "sliding_attention")
      k.refuse("rope_parameters",
               "Gemma 3's holds one object per layer type, full_attention and sliding_attention");
}

// Gemma 3's global layers: rope_parameters.full_attention with v4's rope_scaling merged over it,
// as convert_rope_params_to_dict does (dict.update).
void read_gemma3_global(const ConfigKeys& k, const JsonValue* full, ModelConfig& m) {
  const JsonValue* scaling = rope_object(k, "rope_scaling");
  JsonValue merged;
  merged.type = JsonValue::Type::object;
  if (full) merged = *full;
  if (scaling)
    for (const auto& [key, value] : scaling->object) merged.object[key] = value;
  const ConfigKeys rope(merged, scaling ? "rope_scaling" : "rope_parameters.full_attention");
  refuse_partial_rotary(rope);
  m.gemma.rope_linear = linear_factor(rope);
  if (auto theta = rope.number("rope_theta")) m.rope_theta = static_cast<float>(*theta);
}

// Gemma 3's local layers: rope_parameters.sliding_attention, plain RoPE at its own base.
void read_gemma3_local(const JsonValue* local, ModelConfig& m) {
  if (!local) return;
  const ConfigKeys rope(*local, "rope_parameters.sliding_attention");
  refuse_partial_rotary(rope);
  if (rope_type_of(rope) != "default")
    refuse_key(rope.prefix(), *local, "remat's Gemma 3 local layers take plain RoPE");
  if (auto theta = rope.number("rope_theta")) m.gemma.local_rope_theta = static_cast<float>(*theta);
}

// mrope_section: three non-negative integer counts of rotary frequencies.
std::array<int, 3> mrope_section(const ConfigKeys& rope) {
  const JsonValue* v = rope.given("mrope_section");
  if (!v) return {11, 11, 10};  // Qwen3_5TextRotaryEmbedding's default
  std::array<int, 3> out{};
  bool ok = v->type == JsonValue::Type::array && v->array.size() == 3;
  for (std::size_t i = 0; ok && i < 3; ++i) {
    const JsonValue& e = v->array[i];
    ok = e.type == JsonValue::Type::number && e.number >= 0 && e.number <= 65536 &&
         e.number == std::floor(e.number);
    if (ok) out[i] = static_cast<int>(e.number);
  }
  if (!ok) rope.refuse("mrope_section", "it must list three non-negative integers");
  return out;
}

// partial_rotary_factor from the RoPE object, else config.json's top level, else 0.25
// (Qwen3_5TextConfig's default); both given and different is refused rather than guessed.
float qwen35_partial_rotary(const ConfigKeys& rope, const ConfigKeys& k) {
  const std::optional<double> inner = rope.number("partial_rotary_factor");
  const std::optional<double> top = k.number("partial_rotary_factor");
  if (inner && top && *inner != *top)
    k.refuse("partial_rotary_factor", "it differs from " + rope.name("partial_rotary_factor"));
  return static_cast<float>(inner.value_or(top.value_or(0.25)));
}

}  // namespace

void read_qwen35_rope(const ConfigKeys& k, ModelConfig& m) {
  m.rope_theta = static_cast<float>(k.number("rope_theta").value_or(10000.0));
  m.rope_scaling = RopeScaling::none;
  std::string key = "rope_scaling";
  const JsonValue* v = rope_object(k, key);
  if (!v || v->object.empty()) {
    key = "rope_parameters";
    v = rope_object(k, key);
  }
  JsonValue empty;
  empty.type = JsonValue::Type::object;
  const ConfigKeys rope(v ? *v : empty, key);
  if (auto theta = rope.number("rope_theta")) m.rope_theta = static_cast<float>(*theta);
  const std::string type = rope_type_of(rope);
  if (type != "default" && type != "mrope")
    k.refuse(key, "remat's Qwen3.5 implements its default (multimodal) RoPE, no scaling");
  Qwen35Layers& q = m.qwen35_layers;
  q.partial_rotary = qwen35_partial_rotary(rope, k);
  q.mrope_section = mrope_section(rope);
  q.mrope_interleaved = rope.boolean("mrope_interleaved", true);
}

HfKeys config_keys_of(const ConfigKeys& config) {
  return config.given("rope_parameters") || config.given("dtype") ? HfKeys::transformers5
                                                                  : HfKeys::transformers4;
}

void read_llama_rope(const ConfigKeys& k, ModelConfig& m) {
  m.rope_theta = static_cast<float>(k.number("rope_theta").value_or(10000.0));
  m.rope_scaling = RopeScaling::none;
  // convert_rope_params_to_dict: `rope_scaling or rope_parameters`, so a non-empty rope_scaling
  // wins; the object's rope_theta wins over the top-level one (setdefault).
  std::string key = "rope_scaling";
  const JsonValue* v = rope_object(k, key);
  if (!v || v->object.empty()) {
    key = "rope_parameters";
    v = rope_object(k, key);
  }
  if (!v) return;
  const ConfigKeys rope(*v, key);
  if (auto theta = rope.number("rope_theta")) m.rope_theta = static_cast<float>(*theta);
  refuse_partial_rotary(rope);
  const std::string type = rope_type_of(rope);
  if (type == "default") return;
  if (type != "llama3") k.refuse(key, "remat implements plain RoPE and Llama 3's 'llama3' scaling");
  m.rope_scaling = RopeScaling::llama3;
  m.llama3 =
      llama3_factors(rope, k, key == "rope_parameters" ? std::optional(m.ctx) : std::nullopt);
}

void read_gemma3_rope(const ConfigKeys& k, ModelConfig& m) {
  // Gemma3TextConfig's default_theta: global 1e6, local 1e4; v4's keys fill in what the
  // per-layer-type objects leave out (setdefault).
  m.rope_theta = static_cast<float>(k.number("rope_theta").value_or(1000000.0));
  m.gemma.local_rope_theta = static_cast<float>(k.number("rope_local_base_freq").value_or(10000.0));
  const JsonValue* params = rope_object(k, "rope_parameters");
  if (!params) return read_gemma3_global(k, nullptr, m);
  check_layer_type_keys(k, *params);
  // A layer type's object null or absent is {"rope_type": "default"}
  // (Gemma3TextConfig.convert_rope_params_to_dict).
  const ConfigKeys types(*params, "rope_parameters");
  read_gemma3_global(k, rope_object(types, "full_attention"), m);
  read_gemma3_local(rope_object(types, "sliding_attention"), m);
}

void write_dtype(JsonWriter& w, const ModelConfig& m) {
  w.field(spelled_v5(m) ? "dtype" : "torch_dtype", "float32");
}

void write_llama_rope(JsonWriter& w, const ModelConfig& m) {
  const bool llama3 = m.rope_scaling == RopeScaling::llama3;
  if (!spelled_v5(m)) w.field("rope_theta", shortest_decimal(m.rope_theta));
  if (!spelled_v5(m) && !llama3) {
    w.field("rope_scaling", nullptr);
    return;
  }
  w.key(spelled_v5(m) ? "rope_parameters" : "rope_scaling").begin_object();
  w.field("rope_type", llama3 ? "llama3" : "default");
  if (spelled_v5(m)) w.field("rope_theta", shortest_decimal(m.rope_theta));
  if (llama3)
    w.field("factor", shortest_decimal(m.llama3.factor))
        .field("low_freq_factor", shortest_decimal(m.llama3.low_freq_factor))
        .field("high_freq_factor", shortest_decimal(m.llama3.high_freq_factor))
        .field("original_max_position_embeddings", m.llama3.original_ctx);
  w.end_object();
}

void write_qwen35_rope(JsonWriter& w, const ModelConfig& m) {
  const Qwen35Layers& q = m.qwen35_layers;
  const double partial = shortest_decimal(q.partial_rotary);
  w.field("partial_rotary_factor", partial);
  if (!spelled_v5(m)) w.field("rope_theta", shortest_decimal(m.rope_theta));
  w.key(spelled_v5(m) ? "rope_parameters" : "rope_scaling").begin_object();
  w.field("mrope_interleaved", q.mrope_interleaved);
  w.key("mrope_section").begin_array();
  for (int s : q.mrope_section) w.value(s);
  w.end_array();
  if (spelled_v5(m))
    w.field("partial_rotary_factor", partial).field("rope_theta", shortest_decimal(m.rope_theta));
  w.field("rope_type", "default");
  w.end_object();
}

void write_gemma3_bases(JsonWriter& w, const ModelConfig& m) {
  if (spelled_v5(m)) return;
  w.field("rope_theta", shortest_decimal(m.rope_theta))
      .field("rope_local_base_freq", shortest_decimal(m.gemma.local_rope_theta));
}

void write_gemma3_rope(JsonWriter& w, const ModelConfig& m) {
  const bool linear = m.gemma.rope_linear != 0.0f;
  if (!spelled_v5(m)) {
    if (!linear) {
      w.field("rope_scaling", nullptr);
      return;
    }
    w.key("rope_scaling").begin_object();
    w.field("rope_type", "linear").field("factor", shortest_decimal(m.gemma.rope_linear));
    w.end_object();
    return;
  }
  w.key("rope_parameters").begin_object();
  w.key("full_attention").begin_object();
  w.field("rope_type", linear ? "linear" : "default");
  if (linear) w.field("factor", shortest_decimal(m.gemma.rope_linear));
  w.field("rope_theta", shortest_decimal(m.rope_theta));
  w.end_object();
  w.key("sliding_attention").begin_object();
  w.field("rope_type", "default").field("rope_theta", shortest_decimal(m.gemma.local_rope_theta));
  w.end_object();
  w.end_object();
}

}  // namespace remat
