// Qwen3.5 in GGUF (formats/gguf_qwen35.h): tensor names against gguf-py's qwen35 map, the
// converter's transforms written out by hand from conversion/qwen.py, their inverses, and the
// qwen35.* metadata.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "formats/gguf_qwen35.h"

using namespace remat;

namespace {

// A Qwen3.5 with more value heads than key heads (2 key heads, 6 value heads: 3 per key head),
// so the converter's reordering moves something.
ModelConfig grouped() {
  ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  m.dim = 8;
  m.qwen35_layers.linear_key_heads = 2;
  m.qwen35_layers.linear_value_heads = 6;
  m.qwen35_layers.linear_key_head_dim = 2;
  m.qwen35_layers.linear_value_head_dim = 3;
  return m;
}

std::vector<float> iota(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

}  // namespace

TEST_CASE("qwen35 GGUF names of every Qwen3.5 parameter, and back") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
      {"model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"},
      {"model.layers.0.post_attention_layernorm.weight", "blk.0.post_attention_norm.weight"},
      {"model.layers.0.linear_attn.in_proj_qkv.weight", "blk.0.attn_qkv.weight"},
      {"model.layers.0.linear_attn.in_proj_z.weight", "blk.0.attn_gate.weight"},
      {"model.layers.0.linear_attn.in_proj_a.weight", "blk.0.ssm_alpha.weight"},
      {"model.layers.0.linear_attn.in_proj_b.weight", "blk.0.ssm_beta.weight"},
      {"model.layers.0.linear_attn.conv1d.weight", "blk.0.ssm_conv1d.weight"},
      {"model.layers.0.linear_attn.dt_bias", "blk.0.ssm_dt.bias"},
      {"model.layers.0.linear_attn.A_log", "blk.0.ssm_a"},
      {"model.layers.0.linear_attn.norm.weight", "blk.0.ssm_norm.weight"},
      {"model.layers.0.linear_attn.out_proj.weight", "blk.0.ssm_out.weight"},
      {"model.layers.3.self_attn.q_proj.weight", "blk.3.attn_q.weight"},
      {"model.layers.3.self_attn.k_proj.weight", "blk.3.attn_k.weight"},
      {"model.layers.3.self_attn.v_proj.weight", "blk.3.attn_v.weight"},
      {"model.layers.3.self_attn.q_norm.weight", "blk.3.attn_q_norm.weight"},
      {"model.layers.3.self_attn.k_norm.weight", "blk.3.attn_k_norm.weight"},
      {"model.layers.3.self_attn.o_proj.weight", "blk.3.attn_output.weight"},
      {"model.layers.23.mlp.gate_proj.weight", "blk.23.ffn_gate.weight"},
      {"model.layers.23.mlp.up_proj.weight", "blk.23.ffn_up.weight"},
      {"model.layers.23.mlp.down_proj.weight", "blk.23.ffn_down.weight"},
  };
  for (const auto& [hf, gguf] : cases) {
    CHECK(qwen35_gguf_tensor_name(hf) == gguf);
    CHECK(qwen35_hf_tensor_name(gguf) == hf);
  }
  CHECK_FALSE(qwen35_hf_tensor_name("blk.24.nextn.eh_proj.weight"));
  CHECK_FALSE(qwen35_gguf_tensor_name("mtp.fc.weight"));
  CHECK_FALSE(qwen35_gguf_tensor_name("model.layers.0.linear_attn.in_proj_qkvz.weight"));
  CHECK(qwen35_text_tensor_name("model.language_model.layers.2.linear_attn.A_log") ==
        "model.layers.2.linear_attn.A_log");
  CHECK(qwen35_text_tensor_name("model.language_model.embed_tokens.weight") ==
        "model.embed_tokens.weight");
  CHECK(qwen35_text_tensor_name("lm_head.weight") == "lm_head.weight");
  CHECK_FALSE(qwen35_text_tensor_name("model.visual.blocks.0.attn.qkv.weight"));
  CHECK_FALSE(qwen35_text_tensor_name("mtp.layers.0.self_attn.q_proj.weight"));
}

TEST_CASE("qwen35 value heads move from grouped to tiled order as the converter moves them") {
  // _reorder_v_heads: view as [key heads, per key, d], swap the first two axes. With 2 key heads
  // and 3 value heads each, Hugging Face's order G0v0 G0v1 G0v2 G1v0 G1v1 G1v2 becomes
  // G0v0 G1v0 G0v1 G1v1 G0v2 G1v2.
  const std::vector<int> want = {0, 2, 4, 1, 3, 5};  // GGUF position of HF head h
  for (int h = 0; h < 6; ++h) {
    CHECK(qwen35_gguf_value_head(h, 2, 6) == want[h]);
    CHECK(qwen35_hf_value_head(want[h], 2, 6) == h);
  }
  const ModelConfig m = grouped();
  // in_proj_z [6 heads x 3 rows, 2 columns]: row blocks of 3 move, columns stay.
  const std::vector<float> z =
      qwen35_to_gguf("model.layers.0.linear_attn.in_proj_z.weight", {18, 2}, iota(36), m);
  // GGUF head 1 is HF head 3 (G1v0): its rows 9..11, values 18..23.
  CHECK(std::vector<float>(z.begin() + 6, z.begin() + 12) ==
        std::vector<float>{18, 19, 20, 21, 22, 23});
  // in_proj_qkv: q and k rows (2 x 2 x 2 = 8) stay, the value rows after them move.
  const std::vector<float> qkv =
      qwen35_to_gguf("model.layers.0.linear_attn.in_proj_qkv.weight", {8 + 18, 1}, iota(26), m);
  CHECK(std::vector<float>(qkv.begin(), qkv.begin() + 8) == iota(8));
  CHECK(std::vector<float>(qkv.begin() + 11, qkv.begin() + 14) ==
        std::vector<float>{17, 18, 19});  // GGUF head 1 = HF head 3: value rows 9..11
  // out_proj [2 rows, 18 columns]: column blocks move.
  const std::vector<float> out =
      qwen35_to_gguf("model.layers.0.linear_attn.out_proj.weight", {2, 18}, iota(36), m);
  CHECK(out[3] == 9.0f);        // row 0, GGUF column 3 = HF column 9
  CHECK(out[18 + 4] == 28.0f);  // row 1, GGUF column 4 = HF column 10
  // conv1d [channels, 1, kernel 4]: value channels move, q and k channels stay.
  const std::vector<float> conv =
      qwen35_to_gguf("model.layers.0.linear_attn.conv1d.weight", {26, 1, 4}, iota(104), m);
  CHECK(std::vector<float>(conv.begin(), conv.begin() + 32) == iota(32));
  CHECK(conv[32 + 12] == 32.0f + 36.0f);  // GGUF channel 8 + 3 = HF channel 8 + 9
  // a, b, dt_bias: one entry per head.
  const std::vector<float> dt =
      qwen35_to_gguf("model.layers.0.linear_attn.dt_bias", {6}, iota(6), m);
  CHECK(dt == std::vector<float>{0, 3, 1, 4, 2, 5});
  const std::vector<float> a =
      qwen35_to_gguf("model.layers.0.linear_attn.in_proj_a.weight", {6, 2}, iota(12), m);
  CHECK(a == std::vector<float>{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11});
  // A shape that does not hold the heads is refused.
  CHECK_THROWS_WITH(
      qwen35_to_gguf("model.layers.0.linear_attn.in_proj_z.weight", {17, 2}, iota(34), m),
      Catch::Contains("do not end in 6 heads of 3"));
}

TEST_CASE("qwen35 norms gain 1 except the gated norm, and A_log becomes -exp(A_log)") {
  const ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  const std::vector<float> w = {0.0f, -0.25f, 0.5f};
  for (const char* name :
       {"model.layers.0.input_layernorm.weight", "model.layers.0.post_attention_layernorm.weight",
        "model.layers.3.self_attn.q_norm.weight", "model.layers.3.self_attn.k_norm.weight",
        "model.norm.weight"})
    CHECK(qwen35_to_gguf(name, {3}, w, m) == std::vector<float>{1.0f, 0.75f, 1.5f});
  CHECK(qwen35_to_gguf("model.layers.0.linear_attn.norm.weight", {3}, w, m) == w);
  CHECK(qwen35_to_gguf("model.layers.0.mlp.up_proj.weight", {3, 1}, w, m) == w);
  // Equal key and value heads: nothing moves.
  CHECK(qwen35_to_gguf("model.layers.0.linear_attn.dt_bias", {16}, iota(16), m) == iota(16));
  const std::vector<float> a_log = {0.0f, std::log(2.0f), std::log(16.0f)};
  const std::vector<float> ssm_a =
      qwen35_to_gguf("model.layers.0.linear_attn.A_log", {3}, std::vector<float>(a_log), m);
  CHECK(ssm_a[0] == -1.0f);
  CHECK(ssm_a[1] == Approx(-2.0f).epsilon(1e-7));
  CHECK(ssm_a[2] == Approx(-16.0f).epsilon(1e-7));
}

TEST_CASE("qwen35 tensors round-trip through GGUF: bit for bit but A_log, within 2^-23") {
  const ModelConfig m = grouped();
  for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"model.layers.0.linear_attn.in_proj_qkv.weight", {26, 8}},
           {"model.layers.0.linear_attn.in_proj_z.weight", {18, 8}},
           {"model.layers.0.linear_attn.in_proj_b.weight", {6, 8}},
           {"model.layers.0.linear_attn.conv1d.weight", {26, 1, 4}},
           {"model.layers.0.linear_attn.out_proj.weight", {8, 18}},
           {"model.layers.0.linear_attn.dt_bias", {6}}}) {
    std::vector<float> v(static_cast<std::size_t>(shape[0] * (shape.size() > 1 ? shape[1] : 1) *
                                                  (shape.size() > 2 ? shape[2] : 1)));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i) + 0.5f);
    const std::vector<float> g = qwen35_to_gguf(name, shape, v, m);
    CHECK(g != v);  // the heads moved
    CHECK(qwen35_from_gguf(name, shape, g, m) == v);
  }
  // Zero-centred gains: every bfloat16 value of magnitude 2^-16 or more, and 0, comes back.
  std::vector<float> gains = {0.0f};
  for (uint32_t b = 0x37800000u; b < 0x42000000u; b += 0x10000u) {  // 2^-16 .. 32, bf16 steps
    float f;
    std::memcpy(&f, &b, 4);
    gains.push_back(f);
    gains.push_back(-f);
  }
  const std::string norm = "model.layers.0.input_layernorm.weight";
  const std::vector<int64_t> n = {static_cast<int64_t>(gains.size())};
  CHECK(qwen35_from_gguf(norm, n, qwen35_to_gguf(norm, n, gains, m), m) == gains);
  // A_log through -exp and log, for A_log across [-2, 2] (A from 0.14 to 7.4; the logs of
  // floats themselves come back exactly, so these are not such logs).
  std::vector<float> a_log;
  for (int i = -2000; i < 2000; ++i)
    a_log.push_back(static_cast<float>(i / 1000.0 + 1e-5 * std::sin(i)));
  const std::string name = "model.layers.0.linear_attn.A_log";
  ModelConfig even = ModelConfig::preset("qwen3.5-0.8b");
  even.qwen35_layers.linear_key_heads = even.qwen35_layers.linear_value_heads = 4000;
  const std::vector<int64_t> s = {4000};
  const std::vector<float> back =
      qwen35_from_gguf(name, s, qwen35_to_gguf(name, s, a_log, even), even);
  // ssm_a = -exp(A_log) keeps A's relative precision, 2^-24, which log turns into an absolute
  // error: A_log comes back within 2^-23 plus its own rounding, and near A_log = 0 (A near 1)
  // that is many of A_log's ulps.
  double worst = 0;
  int inexact = 0;
  for (std::size_t i = 0; i < a_log.size(); ++i) {
    const double ulp = std::nextafter(std::fabs(a_log[i]), INFINITY) - std::fabs(a_log[i]);
    worst = std::max(worst, (std::fabs(double(back[i]) - a_log[i]) - ulp) / std::ldexp(1.0, -23));
    inexact += bits(back[i]) != bits(a_log[i]);
  }
  INFO("worst A_log round trip beyond one ulp: " << worst << " x 2^-23; " << inexact
                                                 << " of 4000 inexact");
  CHECK(worst <= 1.0);
  CHECK(inexact > 0);  // not exact: formats/gguf_qwen35.h says so
}

TEST_CASE("qwen35 metadata holds the converter's keys and reads back as the model") {
  const ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  const GgufMetadata md = qwen35_gguf_metadata(m);
  CHECK(md.string("general.architecture") == "qwen35");
  CHECK(md.uint("qwen35.block_count") == 25u);  // 24 layers and the MTP layer
  CHECK(md.uint("qwen35.nextn_predict_layers") == 1u);
  CHECK(md.uint("qwen35.ssm.conv_kernel") == 4u);
  CHECK(md.uint("qwen35.ssm.state_size") == 128u);
  CHECK(md.uint("qwen35.ssm.group_count") == 16u);
  CHECK(md.uint("qwen35.ssm.time_step_rank") == 16u);
  CHECK(md.uint("qwen35.ssm.inner_size") == 2048u);
  CHECK(md.uint("qwen35.full_attention_interval") == 4u);
  CHECK(md.uint("qwen35.rope.dimension_count") == 64u);
  CHECK(md.int32s("qwen35.rope.dimension_sections") == std::vector<int32_t>{11, 11, 10, 0});
  CHECK(md.uint("qwen35.attention.key_length") == 256u);
  ModelConfig back = qwen35_model_config(md, 0);
  back.tied_head = true;  // from the file's tensors: no output.weight
  CHECK(back == m);
  // llama.cpp's alternative layout key, and what neither side can express.
  GgufMetadata listed = md;
  listed.erase("qwen35.full_attention_interval");
  std::vector<bool> recurrent;
  for (int i = 0; i < 25; ++i) recurrent.push_back(i < 24 && (i + 1) % 4 != 0);
  listed.set("qwen35.attention.recurrent_layers", GgufValue::array(recurrent));
  CHECK(qwen35_model_config(listed, 0).qwen35_layers.full_attention_interval == 4);
  recurrent[1] = false;
  listed.set("qwen35.attention.recurrent_layers", GgufValue::array(recurrent));
  CHECK_THROWS_WITH(qwen35_model_config(listed, 0), Catch::Contains("every N-th layer"));
  // Value heads of another size than the key heads (state_size): inner_size / time_step_rank.
  GgufMetadata wide = md;
  wide.set("qwen35.ssm.inner_size", GgufValue::of(uint32_t(4096)));
  const ModelConfig w = qwen35_model_config(wide, 0);
  CHECK(w.qwen35_layers.linear_value_head_dim == 256);
  CHECK(w.qwen35_layers.linear_key_head_dim == 128);
  CHECK(qwen35_gguf_metadata(w).uint("qwen35.ssm.inner_size") == 4096u);
  wide.set("qwen35.ssm.inner_size", GgufValue::of(uint32_t(4100)));
  CHECK_THROWS_WITH(qwen35_model_config(wide, 0),
                    Catch::Contains("ssm.inner_size' (4100) is not a multiple of time_step_rank"));
}
