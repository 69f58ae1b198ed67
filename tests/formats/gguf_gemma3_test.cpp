// Gemma 3 as GGUF (formats/gguf_names.h, gguf_model.h, gguf_model_writer.h): llama.cpp's names
// for its four norms per block, its keys for the window, the layer period, the local RoPE base and
// linear scaling, and every RMSNorm weight stored as the gain 1 + w. A file remat writes reads
// back as what it means (the gain less 1), and writing that again gives the same bytes.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "formats/gguf_model.h"
#include "formats/gguf_model_writer.h"
#include "formats/gguf_writer.h"
#include "tests/support/gguf_model_files.h"
#include "tests/support/temp_folder.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

using Param = test::GgufParam;

// Two layers, the second global (period 2), heads of 12 on a width of 32, window 3, a local RoPE
// base other than llama.cpp's default, linear scaling on the global layer.
ModelConfig gemma3_model() {
  ModelConfig m;
  m.arch = Architecture::llama;
  m.layers = 2;
  m.dim = 32;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn = 48;
  m.vocab = 40;
  m.ctx = 16;
  m.rope_theta = 1000000.0f;
  m.norm_eps = 1e-6f;
  m.qk_norm = true;
  m.head_size = 12;
  m.gemma3 = true;
  m.gemma = {3, 2, 5000.0f, 12.0f, 2.0f};
  return m;
}

bool is_norm(const Param& p) {
  return p.name.ends_with("norm.weight");
}

void write(const fs::path& path, const ModelConfig& m, const std::vector<Param>& params) {
  std::vector<GgufSourceTensor> tensors;
  for (const Param& p : params) tensors.push_back({p.name, p.shape});
  write_gguf_model(path, m, tensors,
                   [&](std::size_t i, uint64_t first, std::span<float> out) {
                     std::memcpy(out.data(), params[i].values.data() + first,
                                 out.size() * sizeof(float));
                   },
                   {});
}

std::vector<float> stored(const GgufFile& f, const std::string& name) {
  const GgufTensor* t = f.tensor(name);
  REQUIRE(t != nullptr);
  std::vector<float> v(t->elements());
  f.read(*t, 0, std::as_writable_bytes(std::span(v)));
  return v;
}

std::vector<Param> read_back(const GgufWeights& w) {
  std::vector<Param> out;
  for (const SafetensorsEntry& e : w.header().tensors) {
    Param p{e.name, e.shape, {}};
    uint64_t n = 1;
    for (int64_t d : e.shape) n *= uint64_t(d);
    p.values.resize(n);
    w.read(e, 0, p.values);
    out.push_back(std::move(p));
  }
  return out;
}

std::string bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("gemma3's tensors have llama.cpp's names, norms shifted by 1, q and k rows in order") {
  CHECK(gguf_arch("gemma3") == GgufArch::gemma3);
  CHECK(gguf_arch_name(GgufArch::gemma3) == "gemma3");
  const std::pair<const char*, const char*> names[] = {
      {"model.layers.4.input_layernorm.weight", "blk.4.attn_norm.weight"},
      {"model.layers.4.post_attention_layernorm.weight", "blk.4.post_attention_norm.weight"},
      {"model.layers.4.pre_feedforward_layernorm.weight", "blk.4.ffn_norm.weight"},
      {"model.layers.4.post_feedforward_layernorm.weight", "blk.4.post_ffw_norm.weight"},
      {"model.layers.4.self_attn.q_norm.weight", "blk.4.attn_q_norm.weight"},
      {"model.layers.4.self_attn.o_proj.weight", "blk.4.attn_output.weight"},
      {"model.layers.4.mlp.gate_proj.weight", "blk.4.ffn_gate.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"model.embed_tokens.weight", "token_embd.weight"}};
  for (const auto& [hf, gguf] : names) {
    INFO(hf);
    CHECK(gguf_tensor_name(hf, GgufArch::gemma3) == gguf);
    CHECK(hf_tensor_name(gguf, GgufArch::gemma3) == hf);
    const GgufLayout l = gguf_layout(hf, GgufArch::gemma3, 4, 2);
    CHECK(l.norm_shift == (std::string(hf).ends_with("norm.weight") ? 1.0f : 0.0f));
    CHECK(l.rope_heads == 0);
  }
  // Llama's post_attention_layernorm is the norm before the MLP; Gemma 3's the one after attention.
  CHECK(gguf_tensor_name("model.layers.0.post_attention_layernorm.weight", GgufArch::qwen3) ==
        "blk.0.ffn_norm.weight");
  CHECK(gguf_layout("model.norm.weight", GgufArch::qwen3, 4, 2).norm_shift == 0.0f);
}

TEST_CASE("a gemma3 model remat writes has llama.cpp's keys and reads back as its gains less 1") {
  test::TempFolder d("gguf_gemma3");
  const ModelConfig m = gemma3_model();
  std::vector<Param> params = test::random_gguf_params(m, 11);
  for (Param& p : params)
    if (is_norm(p)) p.values[0] = 0x1p-30f;  // lost in 1 + w: reads back as 0
  write(d / "a.gguf", m, params);
  const GgufFile f = GgufFile::open(d / "a.gguf");
  const GgufMetadata& md = f.metadata();
  CHECK(md.string("general.architecture") == "gemma3");
  CHECK(md.uint("gemma3.attention.sliding_window") == 3u);
  CHECK(md.uint("gemma3.attention.sliding_window_pattern") == 2u);
  CHECK(md.number("gemma3.rope.freq_base_swa") == 5000.0);
  CHECK(md.number("gemma3.rope.freq_base") == 1000000.0);
  CHECK(md.string("gemma3.rope.scaling.type") == "linear");
  CHECK(md.number("gemma3.rope.scaling.factor") == 2.0);
  CHECK(md.uint("gemma3.attention.key_length") == 12u);
  CHECK(md.uint("gemma3.attention.value_length") == 12u);
  CHECK_FALSE(f.tensor("output.weight"));
  CHECK(f.tensor("blk.1.post_ffw_norm.weight")->ne == std::vector<uint64_t>{32});
  CHECK(f.tensor("blk.1.attn_k_norm.weight")->ne == std::vector<uint64_t>{12});
  for (const Param& p : params) {
    INFO(p.name);
    const std::vector<float> s = stored(f, *gguf_tensor_name(p.name, GgufArch::gemma3));
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < s.size(); ++i)
      wrong += !same_bits(s[i], is_norm(p) ? 1.0f + p.values[i] : p.values[i]);
    CHECK(wrong == 0);
  }

  const GgufWeights w(GgufFile::open(d / "a.gguf"));
  CHECK(w.model() == m);
  const std::vector<Param> back = read_back(w);
  REQUIRE(back.size() == params.size());
  for (std::size_t k = 0; k < back.size(); ++k) {
    const Param& p = params[k];
    INFO(p.name);
    REQUIRE(back[k].name == p.name);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < p.values.size(); ++i)
      wrong +=
          !same_bits(back[k].values[i], is_norm(p) ? (1.0f + p.values[i]) - 1.0f : p.values[i]);
    CHECK(wrong == 0);
    if (is_norm(p)) CHECK(back[k].values[0] == 0.0f);
  }
  // What it read, written again: the same file, byte for byte, and the same weights.
  write(d / "b.gguf", w.model(), back);
  CHECK(bytes(d / "a.gguf") == bytes(d / "b.gguf"));
  const std::vector<Param> again = read_back(GgufWeights(GgufFile::open(d / "b.gguf")));
  for (std::size_t k = 0; k < back.size(); ++k)
    CHECK(std::memcmp(again[k].values.data(), back[k].values.data(),
                      back[k].values.size() * sizeof(float)) == 0);
}

TEST_CASE("a gemma3 model llama.cpp would run otherwise is not written as GGUF") {
  ModelConfig m = gemma3_model();
  m.gemma.query_scalar = 256.0f;  // llama.cpp scales by the head size, 12
  CHECK_THROWS_WITH(gguf_arch_of(m), Catch::Contains("query_pre_attn_scalar"));
  CHECK(gguf_arch_of(ModelConfig::preset("gemma3-270m")) == GgufArch::gemma3);
  CHECK(gguf_arch_of(ModelConfig::preset("gemma3-1b")) == GgufArch::gemma3);
}

TEST_CASE(
    "a gemma3 file's layers read as llama.cpp reads them, and what it cannot mean is refused") {
  test::TempFolder d("gguf_gemma3_read");
  ModelConfig m = gemma3_model();
  m.layers = 7;
  const std::vector<Param> params = test::random_gguf_params(m, 3);
  const fs::path path = d / "m.gguf";
  auto model_with = [&](const std::function<void(GgufMetadata&)>& edit) {
    GgufMetadata md = test::gguf_model_keys(m, "gemma3");
    md.set("gemma3.attention.key_length", GgufValue::of(uint32_t(12)));
    edit(md);
    std::vector<GgufTensorSpec> specs;
    for (const Param& p : params) {
      std::vector<uint64_t> ne(p.shape.rbegin(), p.shape.rend());
      specs.push_back({*gguf_tensor_name(p.name, GgufArch::gemma3), GgmlType::f32, ne});
    }
    GgufWriter w(path, md, specs);
    for (const Param& p : params) w.write(std::span<const float>(p.values));
    w.commit();
    return gguf_model_config(GgufFile::open(path));
  };
  // No window: every layer global. A window without a period: llama.cpp's 6. No local base: 10000.
  ModelConfig r = model_with([](GgufMetadata&) {});
  CHECK(r.gemma.pattern == 1);
  CHECK(r.global_layer(0));
  CHECK(r.gemma.local_rope_theta == 10000.0f);
  CHECK(r.gemma.rope_linear == 0.0f);
  CHECK(r.gemma.query_scalar == 12.0f);
  r = model_with([](GgufMetadata& md) {
    md.set("gemma3.attention.sliding_window", GgufValue::of(uint32_t(5)));
  });
  CHECK(r.gemma.sliding_window == 5);
  CHECK(r.gemma.pattern == 6);
  CHECK_FALSE(r.global_layer(4));
  CHECK(r.global_layer(5));
  auto refused = [&](const std::function<void(GgufMetadata&)>& edit, const std::string& what) {
    INFO(what);
    CHECK_THROWS_WITH(model_with(edit), Catch::Contains(what));
  };
  refused(
      [](GgufMetadata& md) {
        md.set("gemma3.attention.sliding_window", GgufValue::of(uint32_t(5)));
        md.set("gemma3.attention.sliding_window_pattern", GgufValue::of(std::string("x")));
      },
      "'gemma3.attention.sliding_window_pattern' is string, not an unsigned integer");
  refused([](GgufMetadata& md) { md.set("gemma3.final_logit_softcapping", GgufValue::of(30.0f)); },
          "final_logit_softcapping");
  refused(
      [](GgufMetadata& md) {
        md.set("gemma3.rope.scaling.type", GgufValue::of(std::string("yarn")));
      },
      "rope.scaling.type is 'yarn'");
}
