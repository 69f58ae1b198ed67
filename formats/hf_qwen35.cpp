#include "formats/hf_qwen35.h"

#include <stdexcept>
#include <string>

#include "formats/hf_rope.h"

namespace remat {

namespace {

// layer_types ("linear_attention" / "full_attention" per layer) when given, else
// full_attention_interval N (layer i full iff (i + 1) % N == 0; Qwen3_5TextConfig's default 4).
// remat keeps the interval, so a layer_types list of any other shape is refused.
int full_attention_interval(const ConfigKeys& k, int layers) {
  const std::optional<int> given = k.positive_int("full_attention_interval");
  const JsonValue* types = k.given("layer_types");
  if (!types) return given.value_or(4);
  if (types->type != JsonValue::Type::array || static_cast<int>(types->array.size()) != layers)
    k.refuse("layer_types", "it must list one type per layer");
  int interval = layers + 1;  // every layer linear unless one is full
  for (int i = 0; i < layers; ++i)
    if (types->array[i].type == JsonValue::Type::string &&
        types->array[i].string == "full_attention") {
      interval = i + 1;
      break;
    }
  for (int i = 0; i < layers; ++i) {
    const JsonValue& t = types->array[i];
    const char* want = (i + 1) % interval == 0 ? "full_attention" : "linear_attention";
    if (t.type != JsonValue::Type::string || t.string != want)
      k.refuse("layer_types",
               "remat places a full_attention layer every N-th layer and linear_attention between");
  }
  // transformers takes layer_types over the interval; a disagreeing interval is a broken file.
  if (given && *given != interval && interval <= layers)
    k.refuse("full_attention_interval", "it disagrees with layer_types");
  return interval;
}

// Keys whose other values change the computation.
void refuse_other_maths(const ConfigKeys& k) {
  for (const char* key : {"num_experts", "num_experts_per_tok", "moe_intermediate_size",
                          "shared_expert_intermediate_size"})
    if (const JsonValue* v = k.given(key);
        v && !(v->type == JsonValue::Type::number && v->number == 0))
      k.refuse(key, "mixture-of-experts models are not supported");
  if (const std::string act = k.string("hidden_act", "silu"); act != "silu")
    k.refuse("hidden_act", "Qwen3.5's MLP here uses silu (SwiGLU)");
  // Qwen3NextAttention always gates its output; a config that switches it off is not Qwen3.5.
  k.require_bool("attn_output_gate", true, true, "remat's Qwen3.5 gates the attention output");
  if (const std::string gate = k.string("output_gate_type", "swish"); gate != "swish")
    k.refuse("output_gate_type", "the gated norm here multiplies by silu(z) (swish)");
  k.require_bool("attention_bias", false, false, "remat's Qwen3.5 projections have no biases");
  if (const JsonValue* v = k.given("attention_dropout");
      v && !(v->type == JsonValue::Type::number && v->number == 0))
    k.refuse("attention_dropout", "remat's attention has no dropout");
}

// tie_word_embeddings from the text config or the multimodal wrapper (both default false);
// two that disagree are refused rather than guessed between.
bool tied_head(const ConfigKeys& k, const ConfigKeys* outer) {
  const bool inner = k.boolean("tie_word_embeddings", false);
  if (!outer || !outer->given("tie_word_embeddings")) return inner;
  const bool top = outer->boolean("tie_word_embeddings", false);
  if (k.given("tie_word_embeddings") && inner != top)
    outer->refuse("tie_word_embeddings", "it differs from " + k.name("tie_word_embeddings"));
  return top;
}

}  // namespace

ModelConfig qwen35_from(const ConfigKeys& k, const ConfigKeys* outer) {
  ModelConfig m;
  m.arch = Architecture::llama;
  m.qwen35 = true;
  m.qk_norm = true;
  m.layers = k.required_int("num_hidden_layers");
  m.dim = k.required_int("hidden_size");
  m.heads = k.required_int("num_attention_heads");
  m.ffn = k.required_int("intermediate_size");
  m.vocab = k.required_int("vocab_size");
  m.kv_heads = k.positive_int("num_key_value_heads").value_or(4);
  const int head_dim = k.positive_int("head_dim").value_or(256);
  m.head_size = m.dim % m.heads == 0 && head_dim == m.dim / m.heads ? 0 : head_dim;
  m.ctx = k.positive_int("max_position_embeddings").value_or(32768);
  m.norm_eps = static_cast<float>(k.number("rms_norm_eps").value_or(1e-6));
  m.tied_head = tied_head(k, outer);
  Qwen35Layers& q = m.qwen35_layers;
  q.full_attention_interval = full_attention_interval(k, m.layers);
  q.linear_key_heads = k.positive_int("linear_num_key_heads").value_or(16);
  q.linear_value_heads = k.positive_int("linear_num_value_heads").value_or(32);
  q.linear_key_head_dim = k.positive_int("linear_key_head_dim").value_or(128);
  q.linear_value_head_dim = k.positive_int("linear_value_head_dim").value_or(128);
  q.conv_kernel = k.positive_int("linear_conv_kernel_dim").value_or(4);
  // mtp_num_hidden_layers 0 is valid (no MTP layers); positive_int refuses 0, so read it here.
  if (const JsonValue* v = k.given("mtp_num_hidden_layers");
      v && !(v->type == JsonValue::Type::number && v->number == 0))
    q.mtp_layers = *k.positive_int("mtp_num_hidden_layers");
  read_qwen35_rope(k, m);
  refuse_other_maths(k);
  return m;
}

HfKeys qwen35_config_keys(const ConfigKeys& text, const ConfigKeys* outer) {
  if (config_keys_of(text) == HfKeys::transformers5) return HfKeys::transformers5;
  return outer && outer->given("dtype") ? HfKeys::transformers5 : HfKeys::transformers4;
}

void write_qwen35(JsonWriter& w, const ModelConfig& m) {
  const Qwen35Layers& q = m.qwen35_layers;
  w.key("architectures").begin_array().value("Qwen3_5ForCausalLM").end_array();
  w.field("model_type", "qwen3_5_text")
      .field("num_hidden_layers", m.layers)
      .field("hidden_size", m.dim)
      .field("intermediate_size", m.mlp_width())
      .field("num_attention_heads", m.heads)
      .field("num_key_value_heads", m.kv_head_count())
      .field("head_dim", m.head_dim())
      .field("vocab_size", m.vocab)
      .field("max_position_embeddings", m.ctx)
      .field("hidden_act", "silu")
      .field("rms_norm_eps", shortest_decimal(m.norm_eps))
      .field("linear_conv_kernel_dim", q.conv_kernel)
      .field("linear_key_head_dim", q.linear_key_head_dim)
      .field("linear_value_head_dim", q.linear_value_head_dim)
      .field("linear_num_key_heads", q.linear_key_heads)
      .field("linear_num_value_heads", q.linear_value_heads)
      .field("full_attention_interval", q.full_attention_interval);
  w.key("layer_types").begin_array();
  for (int i = 0; i < m.layers; ++i)
    w.value(m.linear_attention_layer(i) ? "linear_attention" : "full_attention");
  w.end_array();
  w.field("attn_output_gate", true).field("mtp_num_hidden_layers", q.mtp_layers);
  write_qwen35_rope(w, m);
  w.field("attention_bias", false).field("tie_word_embeddings", m.tied_head);
}

}  // namespace remat
