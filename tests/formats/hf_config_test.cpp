// Hugging Face config.json to ModelConfig and back: each model_type, transformers' defaults, every
// refusal as one line naming the key and its value, and the round trip through the writer.
#include "formats/hf_config.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

using namespace remat;

namespace {

// SmolLM2-135M's config.json (HuggingFaceTB/SmolLM2-135M), abridged to the keys that matter plus
// a few it carries that remat ignores.
const std::string kSmolLM2 = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": false,
  "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu",
  "hidden_size": 576, "initializer_range": 0.041666666666666664, "intermediate_size": 1536,
  "max_position_embeddings": 8192, "mlp_bias": false, "num_attention_heads": 9,
  "num_hidden_layers": 30, "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": null, "rope_theta": 100000, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true,
  "vocab_size": 49152})";

// Qwen2.5-0.5B's config.json (Qwen/Qwen2.5-0.5B): q/k/v biases are implied by the model type.
const std::string kQwen = R"({
  "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
  "hidden_size": 896, "intermediate_size": 4864, "max_position_embeddings": 32768,
  "max_window_layers": 24, "num_attention_heads": 14, "num_hidden_layers": 24,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "sliding_window": 32768, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "use_sliding_window": false, "vocab_size": 151936})";

// openai-community/gpt2's config.json, abridged.
const std::string kGpt2 = R"({
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
  "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
  "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "vocab_size": 50257})";

const std::string kTinyLlama = R"({"model_type": "llama", "hidden_size": 48,
  "intermediate_size": 80, "num_hidden_layers": 3, "num_attention_heads": 6,
  "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 64)";

// kTinyLlama (open: no closing brace) with `extra` members.
std::string tiny_llama(const std::string& extra) {
  return kTinyLlama + (extra.empty() ? "" : ", " + extra) + "}";
}

// The message of the refusal, which must be one line.
std::string refusal(const std::string& json) {
  try {
    model_config_from_hf_json(json);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    return what;
  }
  FAIL("accepted: " << json);
  return {};
}

}  // namespace

TEST_CASE("published configs map to the presets", "[graph][hf_config]") {
  CHECK(model_config_from_hf_json(kSmolLM2) == ModelConfig::preset("smollm2-135m"));
  CHECK(model_config_from_hf_json(kQwen) == ModelConfig::preset("qwen2.5-0.5b"));
  const ModelConfig gpt2 = model_config_from_hf_json(kGpt2);
  CHECK(gpt2 == ModelConfig::preset("gpt2"));
  CHECK(gpt2.name() == "gpt2");
}

TEST_CASE("absent keys take transformers' defaults for the model type", "[graph][hf_config]") {
  const ModelConfig llama = model_config_from_hf_json(
      R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})");
  CHECK(llama.arch == Architecture::llama);
  CHECK(llama.kv_head_count() == 4);  // LlamaConfig: absent means the query heads
  CHECK(llama.ctx == 2048);
  CHECK(llama.rope_theta == 10000.0f);
  CHECK(llama.norm_eps == 1e-6f);
  CHECK_FALSE(llama.tied_head);
  CHECK_FALSE(llama.qkv_bias);
  CHECK(llama.rope_scaling == RopeScaling::none);
  // Qwen2Config defaults num_key_value_heads to 32 and the context to 32768.
  const ModelConfig qwen = model_config_from_hf_json(
      R"({"model_type": "qwen2", "hidden_size": 256, "intermediate_size": 96,
          "num_hidden_layers": 2, "num_attention_heads": 64, "vocab_size": 100})");
  CHECK(qwen.kv_head_count() == 32);
  CHECK(qwen.ctx == 32768);
  CHECK(qwen.qkv_bias);
  const ModelConfig gpt2 = model_config_from_hf_json(
      R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 2, "vocab_size": 64})");
  CHECK(gpt2.ctx == 1024);
  CHECK(gpt2 == ModelConfig{2, 32, 2, 64, 1024});
}

TEST_CASE("transformers 5's rope_parameters and a matching head_dim are read",
          "[graph][hf_config]") {
  const ModelConfig m = model_config_from_hf_json(tiny_llama(
      R"("head_dim": 8, "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0})"));
  CHECK(m.rope_theta == 500000.0f);
  CHECK(m.rope_scaling == RopeScaling::none);
  // Llama 3.1+ scaling with its four factors, from either key.
  const ModelConfig l3 = model_config_from_hf_json(tiny_llama(
      R"("rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
          "original_max_position_embeddings": 8192, "rope_type": "llama3"})"));
  CHECK(l3.rope_scaling == RopeScaling::llama3);
  CHECK(l3.llama3 == Llama3Scaling{32.0f, 1.0f, 4.0f, 8192});
  const ModelConfig p3 = model_config_from_hf_json(tiny_llama(
      R"("rope_parameters": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1,
          "high_freq_factor": 4, "original_max_position_embeddings": 100, "rope_theta": 5e5})"));
  CHECK(p3.llama3 == Llama3Scaling{8.0f, 1.0f, 4.0f, 100});
  CHECK(p3.rope_theta == 500000.0f);
}

// Qwen/Qwen3-0.6B's config.json, abridged: head_dim 128 with hidden_size 1024 and 16 heads.
const std::string kQwen3 = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})";

// meta-llama/Llama-3.2-1B's config.json, abridged.
const std::string kLlama32 = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
  "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
  "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "vocab_size": 128256})";

TEST_CASE("Qwen3 and Llama 3.2 configs are their presets", "[graph][hf_config]") {
  CHECK(model_config_from_hf_json(kQwen3) == ModelConfig::preset("qwen3-0.6b"));
  CHECK(model_config_from_hf_json(kLlama32) == ModelConfig::preset("llama3.2-1b"));
  // Qwen3Config's head_dim defaults to 128, and its q/k norms come with the model type.
  const ModelConfig q = model_config_from_hf_json(R"({"model_type": "qwen3", "hidden_size": 48,
      "intermediate_size": 80, "num_hidden_layers": 2, "num_attention_heads": 6,
      "num_key_value_heads": 2, "vocab_size": 300})");
  CHECK(q.head_dim() == 128);
  CHECK(q.qk_norm);
  CHECK_FALSE(q.qkv_bias);
  // An explicit head_dim other than hidden / heads is read for Llama too.
  CHECK(model_config_from_hf_json(tiny_llama(R"("head_dim": 16)")).head_dim() == 16);
}

TEST_CASE("every unsupported config is refused naming the key and its value",
          "[graph][hf_config]") {
  struct Case {
    std::string json, message;
  };
  const Case cases[] = {
      {R"({"model_type": "mistral", "hidden_size": 8})", R"(model_type is "mistral")"},
      {R"({"model_type": 3})", "model_type is 3"},
      {R"({"hidden_size": 8})", "no 'model_type'"},
      {"[1]", "must hold a JSON object"},
      {"{", "at byte 1"},
      {tiny_llama(R"("rope_scaling": {"type": "dynamic", "factor": 2.0})"),
       R"(rope_scaling is {"factor":2,"type":"dynamic"})"},
      {tiny_llama(R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0})"),
       R"(rope_scaling is {"factor":4,"rope_type":"yarn"})"},
      {tiny_llama(R"("rope_scaling": "linear")"), R"(rope_scaling is "linear")"},
      {tiny_llama(R"("rope_parameters": {"rope_type": "linear", "factor": 2})"),
       R"(rope_parameters is {"factor":2,"rope_type":"linear"})"},
      {tiny_llama(R"("use_sliding_window": true)"), "use_sliding_window is true"},
      {tiny_llama(R"("layer_types": ["full_attention", "sliding_attention", "full_attention"])"),
       R"(layer_types is ["full_attention","sliding_attention","full_attention"])"},
      {tiny_llama(R"("num_local_experts": 8)"), "num_local_experts is 8"},
      {tiny_llama(R"("num_experts": 4)"), "num_experts is 4"},
      {tiny_llama(R"("n_routed_experts": 64)"), "n_routed_experts is 64"},
      {tiny_llama(R"("num_experts_per_tok": 2)"), "num_experts_per_tok is 2"},
      {tiny_llama(R"("hidden_act": "gelu")"), R"(hidden_act is "gelu")"},
      {tiny_llama(R"("head_dim": 7)"), "head size (7) must be even"},
      {tiny_llama(R"("rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1,
                      "high_freq_factor": 4})"),
       "rope_scaling of rope_type llama3 has no 'original_max_position_embeddings'"},
      {tiny_llama(R"("rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 4,
                      "high_freq_factor": 1, "original_max_position_embeddings": 64})"),
       "0 < low_freq_factor < high_freq_factor"},
      {tiny_llama(R"("attn_logit_softcapping": 50.0)"), "attn_logit_softcapping is 50"},
      {tiny_llama(R"("final_logit_softcapping": 30.0)"), "final_logit_softcapping is 30"},
      {tiny_llama(R"("partial_rotary_factor": 0.5)"), "partial_rotary_factor is 0.5"},
      {R"({"model_type": "qwen3", "hidden_size": 48, "intermediate_size": 80,
           "num_hidden_layers": 2, "num_attention_heads": 6, "vocab_size": 300,
           "attention_bias": true})",
       "attention_bias is true"},
      {R"({"model_type": "qwen3_moe", "hidden_size": 48})", R"(model_type is "qwen3_moe")"},
      {tiny_llama(R"("attention_bias": true)"), "attention_bias is true"},
      {tiny_llama(R"("mlp_bias": true)"), "mlp_bias is true"},
      {tiny_llama(R"("tie_word_embeddings": "yes")"), R"(tie_word_embeddings is "yes")"},
      {tiny_llama(R"("rms_norm_eps": -1)"), "rms_norm_eps is -1"},
      {tiny_llama(R"("rope_theta": 0)"), "rope_theta is 0"},
      {R"({"model_type": "llama", "hidden_size": 48, "num_hidden_layers": 3,
           "num_attention_heads": 6, "vocab_size": 300})",
       "no 'intermediate_size'"},
      {R"({"model_type": "llama", "hidden_size": 48.5, "intermediate_size": 80,
           "num_hidden_layers": 3, "num_attention_heads": 6, "vocab_size": 300})",
       "hidden_size is 48.5"},
      {tiny_llama(R"("num_key_value_heads": 4)"), "kv_heads (4) must divide heads (6)"},
      {R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 2, "vocab_size": 64,
           "activation_function": "relu"})",
       R"(activation_function is "relu")"},
      {R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 2, "vocab_size": 64,
           "n_inner": 64})",
       "n_inner is 64"},
      {R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 2, "vocab_size": 64,
           "layer_norm_epsilon": 1e-6})",
       "layer_norm_epsilon is 1e-06"},
      {R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 2, "vocab_size": 64,
           "tie_word_embeddings": false})",
       "tie_word_embeddings is false"},
      {R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 2, "vocab_size": 64,
           "scale_attn_by_inverse_layer_idx": true})",
       "scale_attn_by_inverse_layer_idx is true"},
      {R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 3, "vocab_size": 64})",
       "heads (3) must divide dim (32)"},
  };
  for (const Case& c : cases) {
    INFO(c.json);
    CHECK_THAT(refusal(c.json), Catch::Contains(c.message));
  }
}

TEST_CASE("config.json written for a model reads back as the same model", "[graph][hf_config]") {
  ModelConfig odd = ModelConfig::preset("llama-tiny");
  odd.norm_eps = 3e-6f;
  odd.rope_theta = 12345.5f;
  ModelConfig scaled = odd;
  scaled.rope_scaling = RopeScaling::llama3;
  scaled.llama3 = {8.0f, 1.5f, 4.25f, 100};
  ModelConfig qwen3_odd = ModelConfig::preset("qwen3-0.6b");
  qwen3_odd.head_size = 12;
  qwen3_odd.dim = 50;
  ModelConfig gemma_odd = ModelConfig::preset("gemma3-270m");
  gemma_odd.layers = 7;
  gemma_odd.gemma = {5, 4, 12345.5f, 24.0f, 8.0f};
  for (const ModelConfig& m :
       {ModelConfig::preset("tiny"), ModelConfig::preset("gpt2-xl"), ModelConfig{3, 48, 3, 256, 29},
        ModelConfig::preset("llama-tiny"), ModelConfig::preset("smollm2-360m"),
        ModelConfig::preset("qwen2.5-0.5b"), odd, ModelConfig::preset("llama3.2-1b"),
        ModelConfig::preset("llama3.2-3b"), ModelConfig::preset("qwen3-0.6b"),
        ModelConfig::preset("qwen3-1.7b"), scaled, qwen3_odd, ModelConfig::preset("gemma3-270m"),
        ModelConfig::preset("gemma3-1b"), gemma_odd}) {
    const std::string text = hf_config_json(m);
    INFO(text);
    CHECK(model_config_from_hf_json(text) == m);
    const JsonValue doc = parse_json(text);
    CHECK(doc.find("torch_dtype")->string == "float32");
    CHECK(doc.find("architectures")->array.at(0).string == (m.arch == Architecture::gpt2
                                                                ? "GPT2LMHeadModel"
                                                            : m.gemma3   ? "Gemma3ForCausalLM"
                                                            : m.qk_norm  ? "Qwen3ForCausalLM"
                                                            : m.qkv_bias ? "Qwen2ForCausalLM"
                                                                         : "LlamaForCausalLM"));
  }
  // Written in decimal as the float prints, not as the double nearest the float.
  CHECK(hf_config_json(ModelConfig::preset("smollm2-135m")).find("\"rms_norm_eps\": 1e-05") !=
        std::string::npos);
  const JsonValue l3 = parse_json(hf_config_json(ModelConfig::preset("llama3.2-1b")));
  CHECK(l3.find("rope_scaling")->find("rope_type")->string == "llama3");
  CHECK(l3.find("rope_scaling")->find("original_max_position_embeddings")->number == 8192);
  CHECK(parse_json(hf_config_json(ModelConfig::preset("qwen3-0.6b"))).find("model_type")->string ==
        "qwen3");
  ModelConfig both = ModelConfig::preset("qwen3-0.6b");
  both.qkv_bias = true;
  CHECK_THROWS_WITH(hf_config_json(both), Catch::Contains("q/k norms together with q/k/v biases"));
}

namespace {

std::string layer_types(int layers, int pattern) {
  std::string s;
  for (int i = 0; i < layers; ++i)
    s += std::string(i ? ", " : "") +
         ((i + 1) % pattern == 0 ? "\"full_attention\"" : "\"sliding_attention\"");
  return "[" + s + "]";
}

// google/gemma-3-270m's config.json, abridged to the keys that matter plus a few remat ignores.
const std::string kGemma3 = R"({
  "_sliding_window_pattern": 6, "architectures": ["Gemma3ForCausalLM"], "attention_bias": false,
  "attention_dropout": 0.0, "attn_logit_softcapping": null, "bos_token_id": 2,
  "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 640, "intermediate_size": 2048, "layer_types": )" +
                            layer_types(18, 6) + R"(,
  "max_position_embeddings": 32768, "model_type": "gemma3_text", "num_attention_heads": 4,
  "num_hidden_layers": 18, "num_key_value_heads": 1, "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0, "rope_scaling": null,
  "rope_theta": 1000000.0, "sliding_window": 512, "torch_dtype": "bfloat16",
  "use_bidirectional_attention": false, "vocab_size": 262144})";

// A small gemma3_text config with `extra` keys added.
std::string tiny_gemma(const std::string& extra) {
  return R"({"model_type": "gemma3_text", "hidden_size": 48, "intermediate_size": 80,
             "num_hidden_layers": 3, "num_attention_heads": 3, "num_key_value_heads": 1,
             "head_dim": 16, "vocab_size": 300)" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

}  // namespace

TEST_CASE("Gemma 3 configs: the published one is its preset, and the layer pattern",
          "[graph][hf_config]") {
  CHECK(model_config_from_hf_json(kGemma3) == ModelConfig::preset("gemma3-270m"));
  // Without layer_types: sliding_window_pattern, else Gemma3TextConfig's defaults (pattern 6,
  // window 4096, query_pre_attn_scalar 256, local base 10000, theta 1e6).
  const ModelConfig d = model_config_from_hf_json(tiny_gemma(""));
  CHECK(d.gemma == Gemma3Layers{4096, 6, 10000.0f, 256.0f});
  CHECK(d.rope_theta == 1000000.0f);
  CHECK(d.norm_eps == 1e-6f);
  CHECK(d.head_dim() == 16);
  CHECK(model_config_from_hf_json(tiny_gemma(R"("sliding_window_pattern": 2)")).gemma.pattern == 2);
  CHECK(model_config_from_hf_json(tiny_gemma(R"("layer_types": )" + layer_types(3, 2)))
            .gemma.pattern == 2);
  // Every layer local: no global layer within the model.
  const ModelConfig local = model_config_from_hf_json(tiny_gemma(
      R"("layer_types": ["sliding_attention", "sliding_attention", "sliding_attention"])"));
  for (int i = 0; i < 3; ++i) CHECK_FALSE(local.global_layer(i));
  // Gemma 3 4B's linear scaling of the global layers' frequencies.
  CHECK(model_config_from_hf_json(tiny_gemma(R"("rope_scaling": {"rope_type": "linear",
                                                                 "factor": 8.0})"))
            .gemma.rope_linear == 8.0f);
  CHECK(model_config_from_hf_json(tiny_gemma(R"("rope_scaling": {"rope_type": "default"})"))
            .gemma.rope_linear == 0.0f);
}

TEST_CASE("Gemma 3 configs remat cannot compute are refused naming the key", "[graph][hf_config]") {
  const std::pair<std::string, std::string> cases[] = {
      {tiny_gemma(R"("attn_logit_softcapping": 50.0)"), "attn_logit_softcapping is 50"},
      {tiny_gemma(R"("final_logit_softcapping": 30.0)"), "final_logit_softcapping is 30"},
      {tiny_gemma(R"("rope_scaling": {"rope_type": "dynamic", "factor": 8.0})"), "rope_scaling is"},
      {tiny_gemma(R"("rope_scaling": {"rope_type": "linear"})"), "has no 'factor'"},
      {tiny_gemma(R"("rope_parameters": {"rope_type": "default"})"), "rope_parameters is"},
      {tiny_gemma(R"("hidden_activation": "gelu")"), R"(hidden_activation is "gelu")"},
      {tiny_gemma(R"("attention_bias": true)"), "attention_bias is true"},
      {tiny_gemma(R"("tie_word_embeddings": false)"), "tie_word_embeddings is false"},
      {tiny_gemma(R"("use_bidirectional_attention": true)"), "use_bidirectional_attention is true"},
      {tiny_gemma(R"("attention_dropout": 0.1)"), "attention_dropout is 0.1"},
      {tiny_gemma(R"("layer_types": ["full_attention", "sliding_attention", "full_attention"])"),
       "layer_types is"},
      {tiny_gemma(R"("layer_types": ["full_attention"])"), "one type per layer"},
      {tiny_gemma(R"("sliding_window": 0)"), "sliding_window is 0"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK_THROWS_WITH(model_config_from_hf_json(text), Catch::Contains(message));
  }
}

TEST_CASE("Gemma 3's config.json lists each layer's type", "[graph][hf_config]") {
  const JsonValue doc = parse_json(hf_config_json(ModelConfig::preset("gemma3-1b")));
  CHECK(doc.find("model_type")->string == "gemma3_text");
  CHECK(doc.find("hidden_activation")->string == "gelu_pytorch_tanh");
  const auto& types = doc.find("layer_types")->array;
  REQUIRE(types.size() == 26);
  CHECK(types[4].string == "sliding_attention");
  CHECK(types[5].string == "full_attention");
  CHECK(doc.find("query_pre_attn_scalar")->number == 256);
  CHECK(doc.find("final_logit_softcapping")->type == JsonValue::Type::null);
}
