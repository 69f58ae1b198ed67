// GGUF LoRA adapters of Qwen3.5 (formats/gguf_adapter.h, arch qwen35): llama.cpp's tensor names,
// and factors stored so that each pair's product B·A is the weight's update in the file's layout
// (formats/gguf_qwen35.h moves value heads along in_proj_* rows and out_proj columns when value
// heads outnumber key heads), read back into PEFT's layout bit for bit. The other architectures'
// adapters are tested beside the model writer (gguf_model_writer_test.cpp).
#include "formats/gguf_adapter.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf_qwen35.h"
#include "tests/graph/random_qwen35.h"
#include "tests/support/temp_folder.h"

using namespace remat;

namespace {

// The tiny Qwen3.5: key heads 2 of 8, value heads 4 of 6 (each key head serves two), layers 0-2
// Gated DeltaNet, layer 3 gated attention (2 heads of 16, 1 key/value head).
ModelConfig tiny(int value_heads = 4) {
  ModelConfig m = testing::tiny_qwen35().model;
  m.qwen35_layers.linear_value_heads = value_heads;
  return m;
}

std::vector<GgufAdapterPair> pairs_of(const ModelConfig& m, int r) {
  const Qwen35Layers& l = m.qwen35_layers;
  const int64_t key = int64_t{l.linear_key_heads} * l.linear_key_head_dim;
  const int64_t value = int64_t{l.linear_value_heads} * l.linear_value_head_dim;
  const int64_t hv = l.linear_value_heads, c = m.dim;
  const std::string lin = "model.layers.0.linear_attn.", att = "model.layers.3.self_attn.";
  return {{lin + "in_proj_qkv.weight", r, c, 2 * key + value},
          {lin + "in_proj_z.weight", r, c, value},
          {lin + "in_proj_a.weight", r, c, hv},
          {lin + "in_proj_b.weight", r, c, hv},
          {lin + "out_proj.weight", r, value, c},
          {"model.layers.0.mlp.down_proj.weight", r, m.mlp_width(), c},
          {"model.layers.3.mlp.down_proj.weight", r, m.mlp_width(), c},
          {att + "q_proj.weight", r, c, 2 * m.heads * m.head_dim()},
          {att + "o_proj.weight", r, m.heads * m.head_dim(), c}};
}

std::vector<float> random_values(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// [rows, inner]·[inner, cols], row-major, summed in index order.
std::vector<float> product(const std::vector<float>& x, const std::vector<float>& y, int64_t rows,
                           int64_t inner, int64_t cols) {
  std::vector<float> out(std::size_t(rows * cols), 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t k = 0; k < inner; ++k)
        out[std::size_t(i * cols + j)] +=
            x[std::size_t(i * inner + k)] * y[std::size_t(k * cols + j)];
  return out;
}

std::vector<float> stored(const GgufFile& f, const std::string& name) {
  const GgufTensor* t = f.tensor(name);
  REQUIRE(t);
  std::vector<float> v(t->bytes / sizeof(float));
  f.read(*t, 0, std::as_writable_bytes(std::span(v)));
  return v;
}

struct Written {
  std::vector<GgufAdapterPair> pairs;
  std::vector<std::vector<float>> a, b;
};

Written write(const std::filesystem::path& path, const ModelConfig& m) {
  Written w;
  w.pairs = pairs_of(m, 3);
  std::mt19937 rng(7);
  for (const GgufAdapterPair& p : w.pairs) {
    w.a.push_back(random_values(std::size_t(p.rank * p.in), rng));
    w.b.push_back(random_values(std::size_t(p.out * p.rank), rng));
  }
  write_gguf_adapter(path, m, 6.0, w.pairs,
                     [&](std::size_t i, bool isb, uint64_t first, std::span<float> out) {
                       const std::vector<float>& src = (isb ? w.b : w.a)[i];
                       std::memcpy(out.data(), src.data() + first, out.size() * sizeof(float));
                     });
  return w;
}

}  // namespace

TEST_CASE("a qwen35 GGUF adapter's products are its weights' updates in the file's layout") {
  test::TempFolder d("gguf_adapter_qwen35");
  for (int value_heads : {4, 2}) {
    INFO("value heads " << value_heads << " over 2 key heads");
    const ModelConfig m = tiny(value_heads);
    const Written w = write(d / "a.gguf", m);
    const GgufFile f = GgufFile::open(d / "a.gguf");
    CHECK(f.metadata().string("general.architecture") == "qwen35");
    CHECK(f.metadata().string("general.type") == "adapter");
    bool moved = false;
    for (std::size_t i = 0; i < w.pairs.size(); ++i) {
      const GgufAdapterPair& p = w.pairs[i];
      const std::string name = *qwen35_gguf_tensor_name(p.weight);
      INFO(p.weight << " as " << name);
      const std::vector<float> a = stored(f, name + ".lora_a"), b = stored(f, name + ".lora_b");
      CHECK(f.tensor(name + ".lora_a")->ne == std::vector<uint64_t>{uint64_t(p.in), 3});
      CHECK(f.tensor(name + ".lora_b")->ne == std::vector<uint64_t>{3, uint64_t(p.out)});
      // llama.cpp adds B·A to the stored weight: it must be the converter's layout of the update
      // Hugging Face's weight gets from PEFT's pair.
      const std::vector<float> update = product(w.b[i], w.a[i], p.out, p.rank, p.in);
      CHECK(product(b, a, p.out, p.rank, p.in) ==
            qwen35_to_gguf(p.weight, {p.out, p.in}, update, m));
      moved |= a != w.a[i] || b != w.b[i];
    }
    CHECK(moved == (value_heads == 4));  // equal head counts move nothing

    const GgufAdapter back = GgufAdapter::open(d / "a.gguf");
    CHECK(back.qwen35());
    for (std::size_t i = 0; i < w.pairs.size(); ++i) {
      const GgufAdapterPair& p = w.pairs[i];
      INFO(p.weight);
      CHECK(back.read(p.weight, false, {p.rank, p.in}, m) == w.a[i]);
      CHECK(back.read(p.weight, true, {p.out, p.rank}, m) == w.b[i]);
    }
    const AdapterConfig c = back.config();
    CHECK(c.rank == 3);
    CHECK(c.alpha == 6.0);
    CHECK_FALSE(c.fan_in_fan_out);
    CHECK(c.targets == std::vector<std::string>{"down_proj", "in_proj_a", "in_proj_b",
                                                "in_proj_qkv", "in_proj_z", "o_proj", "out_proj",
                                                "q_proj"});
  }
}

TEST_CASE("a qwen35 GGUF adapter matches requested targets by layer kind, and only qwen35 models") {
  test::TempFolder d("gguf_adapter_qwen35_config");
  const ModelConfig m = tiny();
  write(d / "a.gguf", m);
  const GgufAdapter back = GgufAdapter::open(d / "a.gguf");
  LoraSpec requested;
  requested.rank = 3;
  requested.alpha = 6;
  // Layer 0 is Gated DeltaNet: q_proj and o_proj select nothing there; layer 3 is attention.
  requested.targets = {"q_proj",    "o_proj",    "in_proj_qkv", "in_proj_z",
                       "in_proj_a", "in_proj_b", "out_proj",    "down_proj"};
  CHECK(back.config(requested).targets == requested.targets);
  // The defaults would also select layer 3's k_proj, which the file does not adapt.
  requested.targets.clear();
  CHECK(back.config(requested).targets.size() == 8);
  CHECK_THROWS_WITH(back.read("model.layers.0.linear_attn.out_proj.weight", false, {3, 24},
                              ModelConfig::preset("smollm2-135m")),
                    Catch::Contains("is an adapter for a qwen35 model; this model is llama"));
  CHECK_THROWS_WITH(write_gguf_adapter(d / "b.gguf", m, 6.0,
                                       {{"model.visual.blocks.0.attn.qkv.weight", 3, 32, 96}},
                                       [](std::size_t, bool, uint64_t, std::span<float>) {}),
                    Catch::Contains("has no GGUF name in a qwen35 model"));
}
