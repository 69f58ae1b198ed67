// PEFT's adapter files for Qwen3.5 (formats/peft_adapter.h): the keys PEFT gives the text model
// (Qwen3_5ForCausalLM) and the multimodal one (Qwen3_5ForConditionalGeneration, whose text model
// sits at model.language_model), and an adapter_config.json of Qwen3.5's default targets, which
// reads back as Qwen3.5's defaults and as nothing another model would default to.
#include "formats/peft_adapter.h"

#include <catch2/catch.hpp>

#include <string>

using namespace remat;

TEST_CASE("peft: Qwen3.5 keys of the text and the multimodal model name one parameter") {
  const ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  const std::string p = "model.layers.0.linear_attn.in_proj_qkv.lora_A.weight";
  CHECK(peft_key(p, m.arch) == "base_model.model." + p);
  CHECK(peft_text_model_key(
            "base_model.model.model.language_model.layers.0.linear_attn.in_proj_qkv.lora_A."
            "weight") == "base_model.model." + p);
  CHECK(peft_text_model_key("base_model.model." + p) == "base_model.model." + p);
  CHECK(peft_text_model_key("base_model.model.model.visual.blocks.0.attn.qkv.lora_A.weight") ==
        std::nullopt);
  CHECK(peft_text_model_key("base_model.model.mtp.layers.0.mlp.up_proj.lora_B.weight") ==
        std::nullopt);
  CHECK(peft_text_model_key("something.else") == "something.else");
}

TEST_CASE("peft: a Qwen3.5 adapter config lists its defaults and reads back as them") {
  const ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  LoraSpec spec;
  spec.rank = 8;
  spec.targets = lora_targets(spec, m);
  const AdapterConfig file =
      parse_adapter_config(adapter_config_json(spec, false, "Qwen/Qwen3.5-0.8B"), "test");
  CHECK(file.targets == default_lora_targets(m));
  CHECK(file.base_model == "Qwen/Qwen3.5-0.8B");
  LoraSpec given;
  given.rank = 8;
  const LoraSpec s = lora_spec_for(file, given, m, "test");
  CHECK(s.targets == file.targets);
  CHECK(s.effective_alpha() == 16);
  // The same file against a Llama model's defaults, which lack the Gated DeltaNet projections.
  CHECK_THROWS_WITH(lora_spec_for(file, given, ModelConfig::preset("smollm2-135m"), "test"),
                    Catch::Contains("test: the adapter targets") &&
                        Catch::Contains("in_proj_qkv") &&
                        Catch::Contains("not the requested down_proj,gate_proj"));
}
