// RoPE keys of config.json in transformers 4's and transformers 5's spelling. The transformers 5
// rules these cases check come from its source (transformers main as of 5.x, read for this file):
// modeling_rope_utils.py, RotaryEmbeddingConfigMixin.convert_rope_params_to_dict (a non-empty
// rope_scaling wins over rope_parameters; the object's rope_theta wins over the top-level one)
// and standardize_rope_params (llama3's original_max_position_embeddings falls back to
// max_position_embeddings; "type" is read where "rope_type" is absent); models/gemma3,
// Gemma3TextConfig.convert_rope_params_to_dict (one object per layer type: full_attention takes
// rope_theta, default 1e6, and v4's rope_scaling merged over it; sliding_attention takes
// rope_local_base_freq, default 1e4).
#include "formats/hf_rope.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "formats/hf_config.h"

using namespace remat;

namespace {

bool v5(const ModelConfig& m) {
  return m.config_keys.keys == HfKeys::transformers5;
}

// meta-llama/Llama-3.2-1B's config.json as transformers 5 saves it, abridged.
const std::string kLlama32v5 = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
  "dtype": "bfloat16", "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu",
  "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 131072,
  "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
  "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_parameters": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192, "rope_theta": 500000.0,
                      "rope_type": "llama3"},
  "tie_word_embeddings": true, "vocab_size": 128256})";

// Qwen/Qwen3-0.6B's, as transformers 5 saves it, abridged.
const std::string kQwen3v5 = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "dtype": "bfloat16",
  "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_parameters": {"rope_theta": 1000000, "rope_type": "default"},
  "sliding_window": null, "tie_word_embeddings": true, "use_sliding_window": false,
  "vocab_size": 151936})";

// Qwen/Qwen2.5-0.5B's, as transformers 5 saves it, abridged.
const std::string kQwen25v5 = R"({
  "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
  "hidden_size": 896, "intermediate_size": 4864, "max_position_embeddings": 32768,
  "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
  "tie_word_embeddings": true, "dtype": "bfloat16", "use_sliding_window": false,
  "vocab_size": 151936})";

// openai-community/gpt2's, as transformers 5 saves it: no RoPE, dtype for torch_dtype.
const std::string kGpt2v5 = R"({
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "dtype": "float32",
  "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
  "n_layer": 12, "n_positions": 1024, "vocab_size": 50257})";

std::string gemma_layer_types(int layers, int pattern) {
  std::string s;
  for (int i = 0; i < layers; ++i)
    s += std::string(i ? ", " : "") +
         ((i + 1) % pattern == 0 ? "\"full_attention\"" : "\"sliding_attention\"");
  return "[" + s + "]";
}

// google/gemma-3-270m's, as transformers 5 saves it, abridged: no rope_theta,
// rope_local_base_freq or rope_scaling, one RoPE object per layer type.
const std::string kGemma3v5 = R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "dtype": "bfloat16", "final_logit_softcapping": null,
  "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 640,
  "intermediate_size": 2048, "layer_types": )" +
                              gemma_layer_types(18, 6) + R"(,
  "max_position_embeddings": 32768, "model_type": "gemma3_text", "num_attention_heads": 4,
  "num_hidden_layers": 18, "num_key_value_heads": 1, "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06,
  "rope_parameters": {"full_attention": {"rope_theta": 1000000.0, "rope_type": "default"},
                      "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
  "sliding_window": 512, "use_bidirectional_attention": false, "vocab_size": 262144})";

const std::string kTinyLlama = R"({"model_type": "llama", "hidden_size": 48,
  "intermediate_size": 80, "num_hidden_layers": 3, "num_attention_heads": 6,
  "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 64)";

std::string tiny_llama(const std::string& extra) {
  return kTinyLlama + ", " + extra + "}";
}

std::string tiny_gemma(const std::string& extra) {
  return R"({"model_type": "gemma3_text", "hidden_size": 48, "intermediate_size": 80,
             "num_hidden_layers": 3, "num_attention_heads": 3, "num_key_value_heads": 1,
             "head_dim": 16, "vocab_size": 300, "sliding_window_pattern": 3)" +
         (extra.empty() ? "" : ", " + extra) + "}";
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

TEST_CASE("transformers 5's published configs are the presets their v4 twins are",
          "[graph][hf_rope]") {
  const ModelConfig l32 = model_config_from_hf_json(kLlama32v5);
  CHECK(l32 == ModelConfig::preset("llama3.2-1b"));
  CHECK(l32.rope_theta == 500000.0f);
  CHECK(l32.llama3 == Llama3Scaling{32.0f, 1.0f, 4.0f, 8192});
  CHECK(v5(l32));
  const ModelConfig q3 = model_config_from_hf_json(kQwen3v5);
  CHECK(q3 == ModelConfig::preset("qwen3-0.6b"));
  CHECK(q3.rope_theta == 1000000.0f);
  CHECK(v5(q3));
  CHECK(model_config_from_hf_json(kQwen25v5) == ModelConfig::preset("qwen2.5-0.5b"));
  const ModelConfig gpt2 = model_config_from_hf_json(kGpt2v5);
  CHECK(gpt2 == ModelConfig::preset("gpt2"));
  CHECK(v5(gpt2));  // dtype alone marks the spelling
  CHECK_FALSE(v5(ModelConfig::preset("gpt2")));
}

TEST_CASE("Gemma 3's per-layer-type RoPE: full_attention is global, sliding_attention local",
          "[graph][hf_rope]") {
  const ModelConfig g = model_config_from_hf_json(kGemma3v5);
  CHECK(g == ModelConfig::preset("gemma3-270m"));
  // Spelled out, since the bases differ by 100x and a swap must not pass.
  CHECK(g.rope_theta == 1000000.0f);
  CHECK(g.gemma.local_rope_theta == 10000.0f);
  CHECK(g.gemma.rope_linear == 0.0f);
  CHECK(v5(g));
  // Gemma 3 4B and larger: linear scaling of the global layers only.
  const ModelConfig big = model_config_from_hf_json(tiny_gemma(R"("rope_parameters": {
      "full_attention": {"factor": 8.0, "rope_type": "linear", "rope_theta": 1000000.0},
      "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}})"));
  CHECK(big.gemma.rope_linear == 8.0f);
  CHECK(big.rope_theta == 1000000.0f);
  CHECK(big.gemma.local_rope_theta == 10000.0f);
  // Odd bases land where their layer type says.
  const ModelConfig odd = model_config_from_hf_json(tiny_gemma(R"("rope_parameters": {
      "sliding_attention": {"rope_theta": 123.0, "rope_type": "default"},
      "full_attention": {"rope_theta": 4567.0, "type": "default"}})"));
  CHECK(odd.rope_theta == 4567.0f);
  CHECK(odd.gemma.local_rope_theta == 123.0f);
}

TEST_CASE("Gemma 3's RoPE objects take v4's keys where they leave a value out",
          "[graph][hf_rope]") {
  // setdefault: rope_theta and rope_local_base_freq fill in a missing base, never override one.
  const ModelConfig filled = model_config_from_hf_json(tiny_gemma(
      R"("rope_theta": 5000.0, "rope_local_base_freq": 50.0, "rope_parameters": {
         "full_attention": {"rope_type": "default"}, "sliding_attention": null})"));
  CHECK(filled.rope_theta == 5000.0f);
  CHECK(filled.gemma.local_rope_theta == 50.0f);
  const ModelConfig kept = model_config_from_hf_json(tiny_gemma(
      R"("rope_theta": 5000.0, "rope_local_base_freq": 50.0, "rope_parameters": {
         "full_attention": {"rope_theta": 7.0}, "sliding_attention": {"rope_theta": 3.0}})"));
  CHECK(kept.rope_theta == 7.0f);
  CHECK(kept.gemma.local_rope_theta == 3.0f);
  // An empty object, or none: Gemma3TextConfig's default bases.
  const ModelConfig empty = model_config_from_hf_json(tiny_gemma(R"("rope_parameters": {})"));
  CHECK(empty.rope_theta == 1000000.0f);
  CHECK(empty.gemma.local_rope_theta == 10000.0f);
  CHECK(v5(empty));
  // v4's rope_scaling is merged over full_attention (dict.update).
  const ModelConfig merged = model_config_from_hf_json(tiny_gemma(
      R"("rope_scaling": {"rope_type": "linear", "factor": 4.0}, "rope_parameters": {
         "full_attention": {"rope_type": "default", "rope_theta": 9.0}})"));
  CHECK(merged.gemma.rope_linear == 4.0f);
  CHECK(merged.rope_theta == 9.0f);
}

TEST_CASE("the Llama family's rope_parameters as transformers 5 standardizes it",
          "[graph][hf_rope]") {
  // The object's rope_theta wins over a top-level one; without one, the top-level one counts.
  CHECK(model_config_from_hf_json(
            tiny_llama(R"("rope_theta": 1.0, "rope_parameters": {"rope_theta": 2.0})"))
            .rope_theta == 2.0f);
  CHECK(model_config_from_hf_json(
            tiny_llama(R"("rope_theta": 3.0, "rope_parameters": {"rope_type": "default"})"))
            .rope_theta == 3.0f);
  // A non-empty rope_scaling wins over rope_parameters; an empty one does not.
  const ModelConfig both = model_config_from_hf_json(tiny_llama(
      R"("rope_scaling": {"rope_type": "default"}, "rope_parameters": {"rope_type": "llama3",
         "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4})"));
  CHECK(both.rope_scaling == RopeScaling::none);
  const ModelConfig empty = model_config_from_hf_json(tiny_llama(
      R"("rope_scaling": {}, "rope_parameters": {"rope_type": "llama3", "factor": 8,
         "low_freq_factor": 1, "high_freq_factor": 4, "rope_theta": 5e5})"));
  CHECK(empty.rope_scaling == RopeScaling::llama3);
  // Without original_max_position_embeddings: the top-level one, else max_position_embeddings.
  CHECK(empty.llama3 == Llama3Scaling{8.0f, 1.0f, 4.0f, 64});
  const ModelConfig top = model_config_from_hf_json(tiny_llama(
      R"("original_max_position_embeddings": 32, "rope_parameters": {"rope_type": "llama3",
         "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4})"));
  CHECK(top.llama3.original_ctx == 32);
  // partial_rotary_factor 1 rotates the whole head, as remat does.
  CHECK(model_config_from_hf_json(
            tiny_llama(R"("rope_parameters": {"rope_theta": 2.0, "partial_rotary_factor": 1})"))
            .rope_theta == 2.0f);
}

TEST_CASE("RoPE in transformers 5's spelling that remat cannot compute is refused in one line",
          "[graph][hf_rope]") {
  const std::pair<std::string, std::string> cases[] = {
      {tiny_llama(R"("rope_parameters": {"rope_type": "yarn", "factor": 4.0,
                     "original_max_position_embeddings": 32})"),
       R"(rope_parameters is {"factor":4,"original_max_position_embeddings":32,"rope_type":"yarn"})"},
      {tiny_llama(R"("rope_parameters": {"type": "dynamic", "factor": 2.0})"),
       R"(rope_parameters is {"factor":2,"type":"dynamic"})"},
      {tiny_llama(R"("rope_parameters": "default")"), R"(rope_parameters is "default")"},
      {tiny_llama(R"("rope_parameters": {"rope_theta": 0})"), "rope_parameters.rope_theta is 0"},
      {tiny_llama(R"("rope_parameters": {"rope_type": "llama3", "factor": 8,
                     "high_freq_factor": 4})"),
       "rope_parameters of rope_type llama3 has no 'low_freq_factor'"},
      {tiny_llama(R"("rope_parameters": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1,
                     "high_freq_factor": 4, "original_max_position_embeddings": 2.5})"),
       "rope_parameters.original_max_position_embeddings is 2.5"},
      {tiny_llama(R"("original_max_position_embeddings": 16, "rope_parameters": {
                     "rope_type": "llama3", "factor": 8, "low_freq_factor": 1,
                     "high_freq_factor": 4, "original_max_position_embeddings": 32})"),
       "original_max_position_embeddings is 16; it differs from "
       "rope_parameters.original_max_position_embeddings"},
      // Qwen3.5's text config: its rope_parameters are read without a crash and refused...
      {tiny_llama(R"("rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10],
                     "rope_type": "default", "rope_theta": 10000000,
                     "partial_rotary_factor": 0.25})"),
       "rope_parameters.partial_rotary_factor is 0.25; remat rotates whole heads"},
      // ... where its own family reads them (tests/formats/hf_qwen35_test.cpp), here refused for
      // the shape keys it lacks.
      {R"({"model_type": "qwen3_5_text", "rope_parameters": {"mrope_interleaved": true,
           "mrope_section": [11, 11, 10], "rope_type": "default", "rope_theta": 10000000,
           "partial_rotary_factor": 0.25}})",
       "config.json has no 'num_hidden_layers'"},
      {tiny_gemma(R"("rope_parameters": {"rope_type": "default", "rope_theta": 10000.0})"),
       R"(rope_parameters is {"rope_theta":10000,"rope_type":"default"}; Gemma 3's holds one)"},
      {tiny_gemma(R"("rope_parameters": {"full_attention": {}, "chunked_attention": {}})"),
       "rope_parameters is"},
      {tiny_gemma(R"("rope_parameters": {"full_attention": "default"})"),
       R"(rope_parameters.full_attention is "default"; it must be an object or null)"},
      {tiny_gemma(R"("rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 2}})"),
       R"(rope_parameters.full_attention is {"factor":2,"rope_type":"yarn"})"},
      {tiny_gemma(R"("rope_parameters": {"full_attention": {"rope_type": "linear"}})"),
       "rope_parameters.full_attention of rope_type linear has no 'factor'"},
      {tiny_gemma(R"("rope_parameters": {"sliding_attention": {"rope_type": "linear",
                     "factor": 2}})"),
       R"(rope_parameters.sliding_attention is {"factor":2,"rope_type":"linear"})"},
      {tiny_gemma(R"("rope_parameters": {"sliding_attention": {"rope_theta": -1}})"),
       "rope_parameters.sliding_attention.rope_theta is -1"},
      {tiny_gemma(R"("rope_parameters": {"full_attention": {"partial_rotary_factor": 0.5}})"),
       "rope_parameters.full_attention.partial_rotary_factor is 0.5"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK_THAT(refusal(text), Catch::Contains(message));
  }
}

namespace {

ModelConfig spelled(ModelConfig m, HfKeys keys) {
  m.config_keys.keys = keys;
  return m;
}

}  // namespace

TEST_CASE("config.json is written in the spelling it was read in", "[graph][hf_rope]") {
  ModelConfig gemma_linear = ModelConfig::preset("gemma3-1b");
  gemma_linear.gemma.rope_linear = 8.0f;
  gemma_linear.gemma.local_rope_theta = 12345.5f;
  for (const ModelConfig& base :
       {ModelConfig::preset("tiny"), ModelConfig::preset("smollm2-135m"),
        ModelConfig::preset("qwen2.5-0.5b"), ModelConfig::preset("llama3.2-1b"),
        ModelConfig::preset("qwen3-0.6b"), ModelConfig::preset("gemma3-270m"), gemma_linear}) {
    for (HfKeys keys : {HfKeys::transformers4, HfKeys::transformers5}) {
      const ModelConfig m = spelled(base, keys);
      const std::string text = hf_config_json(m);
      INFO(text);
      const ModelConfig back = model_config_from_hf_json(text);
      CHECK(back == m);
      CHECK(back.config_keys.keys == keys);
      const JsonValue doc = parse_json(text);
      const bool is_v5 = keys == HfKeys::transformers5;
      const bool rope = m.arch == Architecture::llama;
      CHECK((doc.find("dtype") != nullptr) == is_v5);
      CHECK((doc.find("torch_dtype") != nullptr) == !is_v5);
      CHECK((doc.find("rope_parameters") != nullptr) == (is_v5 && rope));
      CHECK((doc.find("rope_theta") != nullptr) == (!is_v5 && rope));
      CHECK((doc.find("rope_scaling") != nullptr) == (!is_v5 && rope));
      CHECK((doc.find("rope_local_base_freq") != nullptr) == (!is_v5 && m.gemma3));
      CHECK((doc.find("sliding_window_pattern") != nullptr) == (!is_v5 && m.gemma3));
    }
  }
}

TEST_CASE("transformers 5's Gemma 3 config.json names each layer type's base and scaling",
          "[graph][hf_rope]") {
  ModelConfig m = spelled(ModelConfig::preset("gemma3-1b"), HfKeys::transformers5);
  m.gemma.rope_linear = 8.0f;
  const JsonValue doc = parse_json(hf_config_json(m));
  const JsonValue* full = doc.find("rope_parameters")->find("full_attention");
  const JsonValue* local = doc.find("rope_parameters")->find("sliding_attention");
  REQUIRE(full);
  REQUIRE(local);
  CHECK(full->find("rope_type")->string == "linear");
  CHECK(full->find("factor")->number == 8.0);
  CHECK(full->find("rope_theta")->number == 1000000.0);
  CHECK(local->find("rope_type")->string == "default");
  CHECK(local->find("rope_theta")->number == 10000.0);
  CHECK(local->find("factor") == nullptr);
  // The layer pattern travels in layer_types alone.
  CHECK(doc.find("layer_types")->array.at(5).string == "full_attention");
  const JsonValue l3 = parse_json(
      hf_config_json(spelled(ModelConfig::preset("llama3.2-1b"), HfKeys::transformers5)));
  const JsonValue* p = l3.find("rope_parameters");
  CHECK(p->find("rope_type")->string == "llama3");
  CHECK(p->find("rope_theta")->number == 500000.0);
  CHECK(p->find("original_max_position_embeddings")->number == 8192);
}
