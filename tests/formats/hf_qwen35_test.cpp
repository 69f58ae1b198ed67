// Qwen3.5's config.json (formats/hf_qwen35.h): the multimodal qwen3_5 form its checkpoints are
// published in, the text-only qwen3_5_text form, transformers 4's and 5's RoPE keys, written back
// and read again, and the refusals.
#include <catch2/catch.hpp>
#include <string>

#include "formats/hf_config.h"

using namespace remat;

namespace {

// Qwen/Qwen3.5-0.8B's config.json in its published form: the keys and layout of Qwen3.5-27B's
// published file (transformers 5's rope_parameters and dtype under text_config), with the 0.8B's
// values as a pinned revision of its file is quoted elsewhere (no copy of the file itself was at
// hand); vision_config shortened.
const char* const kQwen35_08b = R"({
  "architectures": ["Qwen3_5ForConditionalGeneration"],
  "image_token_id": 248056,
  "model_type": "qwen3_5",
  "text_config": {
    "attention_bias": false, "attention_dropout": 0.0, "attn_output_gate": true,
    "bos_token_id": 248044, "dtype": "bfloat16", "eos_token_id": 248044,
    "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 1024,
    "initializer_range": 0.02, "intermediate_size": 3584,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 16, "linear_value_head_dim": 128, "mamba_ssm_dtype": "float32",
    "max_position_embeddings": 262144, "model_type": "qwen3_5_text", "mtp_num_hidden_layers": 1,
    "mtp_use_dedicated_embeddings": false, "num_attention_heads": 8, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "pad_token_id": null, "partial_rotary_factor": 0.25,
    "rms_norm_eps": 1e-06,
    "rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10],
      "partial_rotary_factor": 0.25, "rope_theta": 10000000, "rope_type": "default"},
    "tie_word_embeddings": true, "use_cache": true, "vocab_size": 248320
  },
  "tie_word_embeddings": true,
  "transformers_version": "4.57.0.dev0",
  "video_token_id": 248057,
  "vision_config": {"depth": 12, "hidden_size": 768, "model_type": "qwen3_5"},
  "vision_end_token_id": 248054,
  "vision_start_token_id": 248053
})";

// A small text-only Qwen3.5 in transformers 4's keys (top-level rope_theta, rope_scaling of type
// mrope), with `extra` spliced in.
std::string tiny_qwen35(const std::string& extra) {
  return R"({"model_type": "qwen3_5_text", "num_hidden_layers": 4, "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16, "intermediate_size": 96,
    "vocab_size": 300, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
    "linear_key_head_dim": 8, "linear_value_head_dim": 12, "full_attention_interval": 2,
    "partial_rotary_factor": 0.5, "rope_theta": 1000000.0,
    "rope_scaling": {"type": "mrope", "mrope_section": [2, 1, 1]})" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

}  // namespace

TEST_CASE("Qwen3.5-0.8B's config.json, in its published form, reads as the qwen3.5-0.8b preset") {
  const ModelConfig m = model_config_from_hf_json(kQwen35_08b);
  CHECK(m == ModelConfig::preset("qwen3.5-0.8b"));
  CHECK(m.config_keys.keys == HfKeys::transformers5);
  CHECK(m.qwen35_layers.mrope_section == std::array<int, 3>{11, 11, 10});
  CHECK(m.rope_theta == 10000000.0f);
}

TEST_CASE("a text-only Qwen3.5 config takes Qwen3_5TextConfig's defaults and v4's RoPE keys") {
  const ModelConfig m = model_config_from_hf_json(tiny_qwen35(""));
  CHECK(m.qwen35);
  CHECK(m.config_keys.keys == HfKeys::transformers4);
  CHECK(m.head_dim() == 16);
  CHECK(m.rotary_dims() == 8);
  CHECK(m.qwen35_layers.conv_kernel == 4);   // linear_conv_kernel_dim's default
  CHECK(m.qwen35_layers.mtp_layers == 0);    // no mtp_num_hidden_layers
  CHECK(m.qwen35_layers.mrope_interleaved);  // Qwen3.5 always interleaves
  CHECK_FALSE(m.tied_head);                  // tie_word_embeddings' default
  CHECK(m.linear_attention_layer(0));
  CHECK_FALSE(m.linear_attention_layer(1));
  // No layer_types and no interval: transformers' 4.
  const ModelConfig d = model_config_from_hf_json(
      R"({"model_type": "qwen3_5_text", "num_hidden_layers": 8, "hidden_size": 64,
          "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 300,
          "head_dim": 256, "linear_num_value_heads": 16})");
  CHECK(d.qwen35_layers.full_attention_interval == 4);
  CHECK(d.qwen35_layers.mrope_section == std::array<int, 3>{11, 11, 10});
  CHECK(d.rotary_dims() == 64);  // 256 * 0.25: the 32 frequencies mrope_section splits
}

TEST_CASE("Qwen3.5 config.json is written in the keys it was read in and reads back the same") {
  for (const std::string& text : {tiny_qwen35(""), std::string(kQwen35_08b)}) {
    const ModelConfig m = model_config_from_hf_json(text);
    const std::string saved = hf_config_json(m);
    CHECK(saved.find("\"model_type\": \"qwen3_5_text\"") != std::string::npos);
    CHECK(saved.find("Qwen3_5ForCausalLM") != std::string::npos);
    const bool v5 = m.config_keys.keys == HfKeys::transformers5;
    CHECK((saved.find("\"rope_parameters\"") != std::string::npos) == v5);
    CHECK((saved.find("\"dtype\"") != std::string::npos) == v5);
    CHECK((saved.find("\"rope_scaling\"") != std::string::npos) == !v5);
    const ModelConfig back = model_config_from_hf_json(saved);
    CHECK(back == m);
    CHECK(back.config_keys.keys == m.config_keys.keys);
    CHECK(back.qwen35_layers.mrope_section == m.qwen35_layers.mrope_section);
  }
}

TEST_CASE("Qwen3.5 configs remat cannot reproduce are refused in one line naming the key") {
  const std::pair<std::string, const char*> cases[] = {
      {tiny_qwen35(R"("attn_output_gate": false)"), "attn_output_gate is false"},
      {tiny_qwen35(R"("hidden_act": "gelu")"), "hidden_act is \"gelu\""},
      {tiny_qwen35(R"("attention_bias": true)"), "attention_bias is true"},
      {tiny_qwen35(R"("layer_types": ["linear_attention", "full_attention", "full_attention",
                                      "full_attention"])"),
       "layer_types is"},
      {tiny_qwen35(R"("layer_types": ["linear_attention", "linear_attention",
                                      "linear_attention", "full_attention"])"),
       "full_attention_interval is 2; it disagrees with layer_types"},
      {tiny_qwen35(R"("num_experts": 8)"), "mixture-of-experts"},
      {tiny_qwen35(R"("linear_num_value_heads": 3)"), "must divide linear_num_value_heads"},
      {R"({"model_type": "qwen3_5_text", "num_hidden_layers": 4, "hidden_size": 64,
           "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 300,
           "head_dim": 16})",
       "mrope_section sums to 32"},
      {R"({"model_type": "qwen3_5"})", "has no 'text_config'"},
      {R"({"model_type": "qwen3_5", "text_config": {"model_type": "qwen3_next"}})",
       "text_config.model_type is \"qwen3_next\""},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK_THROWS_WITH(model_config_from_hf_json(text), Catch::Contains(message));
  }
  // RoPE: a scaling type, a split that is not three counts, factors that disagree.
  CHECK_THROWS_WITH(model_config_from_hf_json(
                        tiny_qwen35("").replace(tiny_qwen35("").find("\"mrope\""), 7, "\"yarn\"")),
                    Catch::Contains("rope_scaling is"));
  std::string two = tiny_qwen35("");
  two.replace(two.find("[2, 1, 1]"), 9, "[2, 2]");
  CHECK_THROWS_WITH(model_config_from_hf_json(two),
                    Catch::Contains("rope_scaling.mrope_section is [2,2]"));
  CHECK_THROWS_WITH(
      model_config_from_hf_json(
          std::string(kQwen35_08b)
              .replace(
                  std::string(kQwen35_08b).find("\"partial_rotary_factor\": 0.25, \"rope_theta\""),
                  30, "\"partial_rotary_factor\": 0.5,")),
      Catch::Contains("text_config.partial_rotary_factor is 0.25; it differs"));
  std::string untied = kQwen35_08b;
  untied.replace(untied.rfind("\"tie_word_embeddings\": true"), 27,
                 "\"tie_word_embeddings\": false");
  CHECK_THROWS_WITH(model_config_from_hf_json(untied),
                    Catch::Contains("tie_word_embeddings is false; it differs"));
}
