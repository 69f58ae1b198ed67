// GPT-2 initialisation statistics, config inference and name matching.
#include <catch2/catch.hpp>

#include <cmath>

#include "formats/gpt2_weights.h"

using namespace remat;

TEST_CASE("GPT-2 initialisation: N(0, 0.02), scaled residual projections, zero bias, unit LN") {
  ModelConfig m = ModelConfig::preset("tiny");
  auto stats = [](const std::vector<float>& v) {
    double mean = 0, sq = 0;
    for (float x : v) mean += x;
    mean /= double(v.size());
    for (float x : v) sq += (x - mean) * (x - mean);
    return std::make_pair(mean, std::sqrt(sq / double(v.size())));
  };
  auto w = gpt2_initial_values({"h.0.mlp.c_fc.weight", {128, 512}}, m, 7, 3);
  auto [mean, sd] = stats(w);
  CHECK(std::abs(mean) < 0.001);
  CHECK(sd == Approx(0.02).epsilon(0.02));
  auto proj = gpt2_initial_values({"h.1.attn.c_proj.weight", {128, 128}}, m, 7, 9);
  CHECK(stats(proj).second == Approx(0.02 / std::sqrt(8.0)).epsilon(0.03));
  for (float x : gpt2_initial_values({"h.0.attn.c_attn.bias", {384}}, m, 7, 4)) REQUIRE(x == 0.0f);
  for (float x : gpt2_initial_values({"ln_f.weight", {128}}, m, 7, 5)) REQUIRE(x == 1.0f);
  CHECK(gpt2_initial_values({"wte.weight", {256, 128}}, m, 7, 0) ==
        gpt2_initial_values({"wte.weight", {256, 128}}, m, 7, 0));
  CHECK(gpt2_initial_values({"wte.weight", {256, 128}}, m, 7, 0) !=
        gpt2_initial_values({"wte.weight", {256, 128}}, m, 8, 0));
}

TEST_CASE("the model shape comes from the checkpoint") {
  SafetensorsContents f;
  f.tensors = {{"transformer.wte.weight", {101, 48}, {}, "F32"},
               {"transformer.wpe.weight", {32, 48}, {}, "F32"},
               {"transformer.h.2.ln_1.weight", {48}, {}, "F32"}};
  f.metadata["n_head"] = "3";
  ModelConfig c = infer_gpt2_config(f, std::nullopt);
  CHECK(c.layers == 3);
  CHECK(c.dim == 48);
  CHECK(c.vocab == 101);
  CHECK(c.ctx == 32);
  CHECK(c.heads == 3);
  CHECK(infer_gpt2_config(f, 4).heads == 4);
  f.metadata.clear();
  CHECK_THROWS_WITH(infer_gpt2_config(f, std::nullopt), Catch::Contains("--heads"));
  CHECK_THROWS_WITH(infer_gpt2_config(f, 5), Catch::Contains("head"));  // 5 does not divide 48
  f.tensors.erase(f.tensors.begin());
  CHECK_THROWS_WITH(infer_gpt2_config(f, 3), Catch::Contains("wte.weight"));
}

TEST_CASE("checkpoint tensors are matched by name, shape-checked, extras refused") {
  SafetensorsContents f;
  f.tensors = {
      {"transformer.wte.weight", {4, 2}, {}, "F32"}, {"h.0.attn.bias", {1, 1, 4, 4}, {}, "F32"},
      {"h.0.attn.masked_bias", {}, {}, "F32"},       {"h.0.attn.c_attn.bias", {6}, {}, "F32"},
      {"lm_head.weight", {4, 2}, {}, "F32"},         {"ln_f.bias", {2}, {}, "F32"}};
  std::vector<ParameterSpec> params = {
      {"wte.weight", {4, 2}}, {"h.0.attn.c_attn.bias", {6}}, {"ln_f.bias", {2}}};
  auto m = match_gpt2_parameters(f, params);
  REQUIRE(m.size() == 3);
  CHECK(m[0]->name == "transformer.wte.weight");
  CHECK(m[1]->name == "h.0.attn.c_attn.bias");  // a parameter, not the mask buffer "attn.bias"
  CHECK(m[2]->name == "ln_f.bias");
  params.erase(params.begin() + 1);
  CHECK_THROWS_WITH(
      match_gpt2_parameters(
          f, {{"wte.weight", {4, 2}}, {"h.0.attn.c_attn.bias", {6}}, {"ln_f.bias", {3}}}),
      Catch::Contains("has shape [2]; the model needs [3]"));
  CHECK_THROWS_WITH(match_gpt2_parameters(f, {{"wte.weight", {4, 2}}, {"ln_f.bias", {2}}}),
                    Catch::Contains("'h.0.attn.c_attn.bias', which this model does not use"));
  CHECK_THROWS_WITH(match_gpt2_parameters(f, {{"wte.weight", {4, 2}},
                                              {"h.0.attn.c_attn.bias", {6}},
                                              {"ln_f.bias", {2}},
                                              {"wpe.weight", {8, 2}}}),
                    Catch::Contains("no tensor 'wpe.weight'"));
}
