// Writing models and LoRA adapters as GGUF (formats/gguf_model_writer.h, formats/gguf_adapter.h):
// the converter's metadata, and values that read back through formats/gguf_model.h and
// GgufAdapter exactly as F32 and rounded to nearest even as F16 and BF16, for the llama (q/k rows
// permuted), qwen2 and gpt2 (transposed) layouts, with host memory bounded by the pieces asked for.
#include "formats/gguf_model_writer.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/half_float.h"
#include "formats/gguf_adapter.h"
#include "formats/gguf_model.h"
#include "formats/gguf_rope_freqs.h"
#include "formats/gguf_writer.h"
#include "graph/model_builder.h"
#include "tests/support/gguf_model_files.h"
#include "tests/support/temp_folder.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

using Param = test::GgufParam;

std::vector<Param> random_params(const ModelConfig& m, uint32_t seed) {
  return test::random_gguf_params(m, seed);
}

ModelConfig llama_model(bool qkv_bias, bool tied) {
  ModelConfig m;
  m.arch = Architecture::llama;
  m.layers = 2;
  m.dim = 32;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn = 48;
  m.vocab = 40;
  m.ctx = 16;
  m.rope_theta = 5000.0f;
  m.norm_eps = 1e-6f;
  m.qkv_bias = qkv_bias;
  m.tied_head = tied;
  return m;
}

// Qwen3: q/k norms, heads of 12 on a width of 32 (q_proj 48 rows).
ModelConfig qwen3_model() {
  ModelConfig m = llama_model(false, true);
  m.qk_norm = true;
  m.head_size = 12;
  return m;
}

// Llama 3's scaling on heads of 8 at base 5000: wavelengths 6.3, 53, 444 and 3736, the third in
// the band (250, 1000).
ModelConfig llama3_model() {
  ModelConfig m = llama_model(false, false);
  m.rope_scaling = RopeScaling::llama3;
  m.llama3 = {8.0f, 1.0f, 4.0f, 1000};
  return m;
}

ModelConfig gpt2_model() {
  return ModelConfig{2, 32, 4, 40, 16};
}

// Writes `params`, counting the largest piece asked for.
void write(const fs::path& path, const ModelConfig& m, const std::vector<Param>& params,
           const GgufModelOptions& o, uint64_t* largest = nullptr) {
  std::vector<GgufSourceTensor> tensors;
  for (const Param& p : params) tensors.push_back({p.name, p.shape});
  write_gguf_model(
      path, m, tensors,
      [&](std::size_t i, uint64_t first, std::span<float> out) {
        if (largest) *largest = std::max<uint64_t>(*largest, out.size());
        std::memcpy(out.data(), params[i].values.data() + first, out.size() * sizeof(float));
      },
      o);
}

// Every parameter read back through GgufWeights, compared with `expect(value, is_matrix)`.
template <class Expect>
void check_reads_back(const fs::path& path, const ModelConfig& m, const std::vector<Param>& params,
                      Expect expect) {
  const GgufWeights w(GgufFile::open(path));
  CHECK(w.model() == m);
  REQUIRE(w.header().tensors.size() == params.size());
  for (const Param& p : params) {
    const SafetensorsEntry* e = nullptr;
    for (const SafetensorsEntry& t : w.header().tensors)
      if (t.name == p.name) e = &t;
    INFO(p.name);
    REQUIRE(e != nullptr);
    CHECK(e->shape == p.shape);
    std::vector<float> back(p.values.size());
    w.read(*e, 0, back);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < back.size(); ++i)
      if (const float want = expect(p.values[i], p.shape.size() == 2);
          std::memcmp(&back[i], &want, sizeof(float)) != 0)
        ++wrong;
    CHECK(wrong == 0);
  }
}

}  // namespace

TEST_CASE("a model's metadata is the converter's, tokenizer none unless carried over") {
  const ModelConfig m = llama_model(false, false);
  const GgufMetadata md = gguf_model_metadata(m, {});
  std::vector<std::string> keys;
  for (const auto& e : md.entries()) keys.push_back(e.key);
  CHECK(keys == std::vector<std::string>{
                    "general.architecture", "general.type", "general.name", "llama.block_count",
                    "llama.context_length", "llama.embedding_length", "llama.feed_forward_length",
                    "llama.attention.head_count", "llama.attention.head_count_kv",
                    "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon",
                    "llama.rope.dimension_count", "llama.vocab_size", "general.file_type",
                    "general.quantization_version", "tokenizer.ggml.model"});
  CHECK(md.string("general.architecture") == "llama");
  CHECK(md.find("llama.block_count")->type() == GgufValueType::uint32);
  CHECK(md.find("llama.rope.freq_base")->type() == GgufValueType::float32);
  CHECK(md.number("llama.rope.freq_base") == 5000.0);
  CHECK(md.uint("llama.attention.head_count_kv") == 2u);
  CHECK(md.uint("llama.rope.dimension_count") == 8u);
  CHECK(md.uint("llama.feed_forward_length") == 48u);
  CHECK(md.uint("general.file_type") == 0u);
  CHECK(md.string("tokenizer.ggml.model") == "none");

  CHECK(gguf_model_metadata(llama_model(true, true), {}).string("general.architecture") == "qwen2");
  GgufModelOptions o;
  o.matrix_type = GgmlType::bf16;
  o.name = "tiny";
  o.extra.set("tokenizer.ggml.model", GgufValue::of("gpt2"));
  o.extra.set("tokenizer.chat_template", GgufValue::of("{{ x }}"));
  const GgufMetadata g = gguf_model_metadata(gpt2_model(), o);
  CHECK(g.string("general.architecture") == "gpt2");
  CHECK(g.string("general.name") == "tiny");
  CHECK(g.uint("general.file_type") == 32u);
  CHECK(g.number("gpt2.attention.layer_norm_epsilon") == double(1e-5f));
  CHECK_FALSE(g.contains("gpt2.attention.head_count_kv"));
  CHECK(g.string("tokenizer.ggml.model") == "gpt2");
  CHECK(g.entries().back().key == "tokenizer.chat_template");

  GgufModelOptions clash;
  clash.extra.set("general.name", GgufValue::of("x"));
  CHECK_THROWS_WITH(gguf_model_metadata(m, clash), Catch::Contains("'general.name'"));
  // Llama 3's scaling is a tensor, rope_freqs: no key (the converter writes none for llama3).
  const ModelConfig scaled = ModelConfig::preset("llama3.2-1b");
  const GgufMetadata scaled_keys = gguf_model_metadata(scaled, {});
  for (const auto& e : scaled_keys.entries()) CHECK(e.key.find("scaling") == std::string::npos);
  CHECK(scaled_keys.uint("llama.rope.dimension_count") == 64u);
  ModelConfig scaled_qwen3 = ModelConfig::preset("qwen3-0.6b");
  scaled_qwen3.rope_scaling = RopeScaling::llama3;
  scaled_qwen3.llama3 = {8.0f, 1.0f, 4.0f, 8192};
  CHECK_THROWS_WITH(gguf_model_metadata(scaled_qwen3, {}), Catch::Contains("read no rope_freqs"));
  ModelConfig biased = ModelConfig::preset("qwen3-0.6b");
  biased.qkv_bias = true;
  CHECK_THROWS_WITH(gguf_model_metadata(biased, {}), Catch::Contains("qwen3 has no biases"));
  GgufModelOptions q4;
  q4.matrix_type = GgmlType::q4_0;
  CHECK_THROWS_WITH(gguf_model_metadata(m, q4), Catch::Contains("f32, f16 or bf16"));
}

TEST_CASE("F32 models read back bit for bit: llama permuted, qwen2 with biases, gpt2 transposed") {
  test::TempFolder d("gguf_model_writer_f32");
  for (const ModelConfig& m : {llama_model(false, false), llama_model(true, true), gpt2_model(),
                               qwen3_model(), llama3_model()}) {
    INFO(architecture_name(m.arch) << (m.qkv_bias ? " with q/k/v biases" : "")
                                   << (m.rope_scaling != RopeScaling::none ? " llama3" : ""));
    const std::vector<Param> params = random_params(m, 7);
    write(d / "m.gguf", m, params, {});
    const GgufFile f = GgufFile::open(d / "m.gguf");
    CHECK(f.metadata().string("general.architecture") ==
          std::string(gguf_arch_name(gguf_arch_of(m))));
    // Tensor names and dimensions as llama.cpp creates them.
    if (m.arch == Architecture::gpt2) {
      REQUIRE(f.tensor("blk.0.attn_qkv.weight"));
      CHECK(f.tensor("blk.0.attn_qkv.weight")->ne == std::vector<uint64_t>{32, 96});
      CHECK(f.tensor("position_embd.weight")->ne == std::vector<uint64_t>{32, 16});
      CHECK_FALSE(f.tensor("output.weight"));
    } else {
      CHECK(f.tensor("blk.1.attn_k.weight")->ne ==
            std::vector<uint64_t>{32, uint64_t(m.kv_head_count() * m.head_dim())});
      CHECK(f.tensor("blk.1.ffn_gate.weight")->ne == std::vector<uint64_t>{32, 48});
      CHECK((f.tensor("output.weight") != nullptr) == !m.tied_head);
      CHECK((f.tensor("blk.0.attn_q.bias") != nullptr) == m.qkv_bias);
      CHECK((f.tensor("blk.1.attn_k_norm.weight") != nullptr) == m.qk_norm);
    }
    if (m.qk_norm) {  // qwen3: the head size written as the converter writes head_dim
      CHECK(f.metadata().uint("qwen3.attention.key_length") == 12u);
      CHECK(f.metadata().uint("qwen3.attention.value_length") == 12u);
      CHECK(f.metadata().uint("qwen3.rope.dimension_count") == 12u);
      CHECK(f.tensor("blk.0.attn_q.weight")->ne == std::vector<uint64_t>{32, 48});
      CHECK(f.tensor("blk.0.attn_q_norm.weight")->ne == std::vector<uint64_t>{12});
    }
    CHECK((f.tensor("rope_freqs.weight") != nullptr) == (m.rope_scaling != RopeScaling::none));
    check_reads_back(d / "m.gguf", m, params, [](float v, bool) { return v; });
  }
}

TEST_CASE("llama3 scaling is written as the converter's rope_freqs first, and reads back") {
  test::TempFolder d("gguf_model_writer_llama3");
  const ModelConfig m = llama3_model();
  const std::vector<Param> params = random_params(m, 5);
  write(d / "m.gguf", m, params, {});
  const GgufFile f = GgufFile::open(d / "m.gguf");
  REQUIRE(f.tensors().size() == params.size() + 1);
  const GgufTensor& t = f.tensors().front();
  CHECK(t.name == "rope_freqs.weight");
  CHECK(t.type == GgmlType::f32);
  CHECK(t.ne == std::vector<uint64_t>{4});
  std::vector<float> v(4);
  f.read(t, 0, std::as_writable_bytes(std::span(v)));
  CHECK(v == gguf_rope_freqs(m.llama3, m.rope_theta, 8));
  // Written again from what was read: the same bytes.
  const GgufWeights w(GgufFile::open(d / "m.gguf"));
  REQUIRE(w.model() == m);
  std::vector<GgufSourceTensor> tensors;
  for (const SafetensorsEntry& e : w.header().tensors) tensors.push_back({e.name, e.shape});
  write_gguf_model(d / "again.gguf", w.model(), tensors,
                   [&](std::size_t i, uint64_t first, std::span<float> out) {
                     w.read(w.header().tensors[i], first, out);
                   },
                   {});
  CHECK(test::read_bytes(d / "again.gguf") == test::read_bytes(d / "m.gguf"));
}

TEST_CASE("F16 and BF16 models round their matrices to nearest even and keep vectors F32") {
  test::TempFolder d("gguf_model_writer_16");
  const ModelConfig m = llama_model(false, false);
  std::vector<Param> params = random_params(m, 9);
  // Values halfway between two bf16 / f16 neighbours: ties go to the even one.
  params[1].values[0] = 1.0f + 0x1p-8f;      // bf16 tie: 1.0 (even), not 1.0078125
  params[1].values[1] = 1.0f + 0x1p-11f;     // f16 tie: 1.0
  params[1].values[2] = 1.0f + 3 * 0x1p-8f;  // bf16 tie: 1.015625 (even mantissa)
  for (GgmlType t : {GgmlType::f16, GgmlType::bf16}) {
    INFO(ggml_type_info(t).name);
    GgufModelOptions o;
    o.matrix_type = t;
    write(d / "m.gguf", m, params, o);
    const GgufFile f = GgufFile::open(d / "m.gguf");
    CHECK(f.metadata().uint("general.file_type") == gguf_file_type(t));
    CHECK(f.tensor("blk.0.attn_q.weight")->type == t);
    CHECK(f.tensor("blk.0.attn_norm.weight")->type == GgmlType::f32);
    CHECK(f.tensor("output_norm.weight")->type == GgmlType::f32);
    check_reads_back(d / "m.gguf", m, params, [t](float v, bool matrix) {
      return !matrix              ? v
             : t == GgmlType::f16 ? f16_to_float(float_to_f16(v))
                                  : bf16_to_float(float_to_bf16(v));
    });
  }
  CHECK(bf16_to_float(float_to_bf16(1.0f + 0x1p-8f)) == 1.0f);
  CHECK(f16_to_float(float_to_f16(1.0f + 0x1p-11f)) == 1.0f);
  CHECK(bf16_to_float(float_to_bf16(1.0f + 3 * 0x1p-8f)) == 1.0f + 4 * 0x1p-8f);
}

TEST_CASE("the writer asks for bounded pieces, and a failed write keeps the old file") {
  test::TempFolder d("gguf_model_writer_pieces");
  ModelConfig m = gpt2_model();
  m.vocab = 4096 + 3;  // wte: more floats than one piece... with dim 32: 131k
  m.dim = 1024 + 32;   // a transposed c_fc of 1056 x 4224 floats: 4.4M, over one piece
  m.heads = 8;
  m.layers = 1;
  const std::vector<Param> params = random_params(m, 3);
  uint64_t largest = 0;
  write(d / "m.gguf", m, params, {}, &largest);
  CHECK(largest <= kGgufWritePieceFloats);
  check_reads_back(d / "m.gguf", m, params, [](float v, bool) { return v; });

  const auto before = test::read_bytes(d / "m.gguf");
  std::vector<GgufSourceTensor> tensors;
  for (const Param& p : params) tensors.push_back({p.name, p.shape});
  CHECK_THROWS_WITH(write_gguf_model(d / "m.gguf", m, tensors,
                                     [](std::size_t i, uint64_t, std::span<float>) {
                                       if (i == 3) throw std::runtime_error("read failed");
                                     },
                                     {}),
                    "read failed");
  CHECK(test::read_bytes(d / "m.gguf") == before);
  CHECK(d.entries() == 1);
  tensors.push_back({"lm_head.weight", {40, 32}});
  CHECK_THROWS_WITH(write_gguf_model(d / "x.gguf", m, tensors, {}, {}),
                    Catch::Contains("'lm_head.weight' has no GGUF name"));
}

TEST_CASE("a GGUF adapter has llama.cpp's keys and layout and reads back bit for bit") {
  test::TempFolder d("gguf_adapter_rt");
  for (const ModelConfig& m : {llama_model(false, false), llama_model(true, true), gpt2_model()}) {
    INFO(architecture_name(m.arch) << (m.qkv_bias ? " with q/k/v biases" : ""));
    const bool gpt2 = m.arch == Architecture::gpt2;
    const int r = 3;
    std::vector<GgufAdapterPair> pairs;
    if (gpt2)
      pairs = {{"h.0.attn.c_attn.weight", r, 32, 96}, {"h.1.mlp.c_proj.weight", r, 128, 32}};
    else
      pairs = {{"model.layers.0.self_attn.q_proj.weight", r, 32, 32},
               {"model.layers.0.self_attn.k_proj.weight", r, 32, 16},
               {"model.layers.1.self_attn.q_proj.weight", r, 32, 32},
               {"model.layers.1.self_attn.k_proj.weight", r, 32, 16},
               {"model.layers.1.mlp.down_proj.weight", r, 48, 32}};
    std::vector<std::vector<float>> a, b;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const GgufAdapterPair& p : pairs) {
      a.emplace_back(std::size_t(p.rank * p.in));
      b.emplace_back(std::size_t(p.out * p.rank));
      for (float& v : a.back()) v = normal(rng);
      for (float& v : b.back()) v = normal(rng);
    }
    auto reader = [&](std::size_t i, bool isb, uint64_t first, std::span<float> out) {
      std::memcpy(out.data(), (isb ? b : a)[i].data() + first, out.size() * sizeof(float));
    };
    write_gguf_adapter(d / "a.gguf", m, 6.0, pairs, reader);
    const GgufFile f = GgufFile::open(d / "a.gguf");
    CHECK(f.metadata().string("general.type") == "adapter");
    CHECK(f.metadata().string("adapter.type") == "lora");
    CHECK(f.metadata().string("general.architecture") ==
          std::string(gguf_arch_name(gguf_arch_of(m))));
    CHECK(f.metadata().find("adapter.lora.alpha")->type() == GgufValueType::float32);
    const std::string first = gpt2 ? "blk.0.attn_qkv.weight" : "blk.0.attn_q.weight";
    REQUIRE(f.tensor(first + ".lora_a"));
    CHECK(f.tensor(first + ".lora_a")->ne == std::vector<uint64_t>{32, 3});
    CHECK(f.tensor(first + ".lora_b")->ne == std::vector<uint64_t>{3, gpt2 ? 96u : 32u});
    if (!gpt2) {
      // B's rows as the base's q rows: permuted for llama, as they are for qwen2; A never.
      std::vector<float> stored(32 * 3);
      f.read(*f.tensor(first + ".lora_b"), 0, std::as_writable_bytes(std::span(stored)));
      for (uint64_t row = 0; row < 32; ++row) {
        const uint64_t at = m.qkv_bias ? row : gguf_row_of(row, 32, 4);
        CHECK(std::memcmp(&stored[at * 3], &b[0][row * 3], 3 * sizeof(float)) == 0);
      }
      std::vector<float> stored_a(3 * 32);
      f.read(*f.tensor(first + ".lora_a"), 0, std::as_writable_bytes(std::span(stored_a)));
      CHECK(stored_a == a[0]);
    }
    const GgufAdapter back(GgufFile::open(d / "a.gguf"));
    const AdapterConfig c = back.config();
    CHECK(c.rank == 3);
    CHECK(c.alpha == 6.0);
    CHECK(c.fan_in_fan_out == gpt2);
    CHECK(c.targets == (gpt2 ? std::vector<std::string>{"attn.c_attn", "mlp.c_proj"}
                             : std::vector<std::string>{"down_proj", "k_proj", "q_proj"}));
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const GgufAdapterPair& p = pairs[i];
      CHECK(back.read(p.weight, false, {p.rank, p.in}, m) == a[i]);
      CHECK(back.read(p.weight, true, {p.out, p.rank}, m) == b[i]);
    }
    CHECK_THROWS_WITH(back.read(pairs[0].weight, true, {pairs[0].out, 4}, m),
                      Catch::Contains("the adapter needs"));
    CHECK_THROWS_WITH(
        back.read(gpt2 ? "h.1.attn.c_attn.weight" : "model.layers.0.mlp.up_proj.weight", false,
                  {3, 32}, m),
        Catch::Contains("has no tensor"));

    // F16: every value rounded to nearest even.
    write_gguf_adapter(d / "h.gguf", m, 6.0, pairs, reader, GgmlType::f16);
    const GgufAdapter half(GgufFile::open(d / "h.gguf"));
    std::vector<float> rounded = b[0];
    for (float& v : rounded) v = f16_to_float(float_to_f16(v));
    CHECK(half.read(pairs[0].weight, true, {pairs[0].out, 3}, m) == rounded);
  }
}

TEST_CASE("a GGUF adapter is refused naming what is wrong") {
  test::TempFolder d("gguf_adapter_refusals");
  const ModelConfig m = llama_model(false, false);
  const std::vector<Param> params = random_params(m, 1);
  write(d / "model.gguf", m, params, {});
  CHECK_THROWS_WITH(GgufAdapter::open(d / "model.gguf"),
                    Catch::Contains("general.type is 'model', not 'adapter'"));

  auto write_with = [&](const GgufMetadata& md, const std::vector<GgufTensorSpec>& specs) {
    GgufWriter w(d / "a.gguf", md, specs);
    for (const GgufTensorSpec& s : specs) {
      std::vector<float> zeros(gguf_tensor_bytes(s) / sizeof(float));
      w.write(std::span<const float>(zeros));
    }
    w.commit();
    return d / "a.gguf";
  };
  const GgufMetadata md = gguf_adapter_metadata(m, 8);
  CHECK_THROWS_WITH(
      GgufAdapter::open(write_with(md, {{"blk.0.attn_q.weight.lora_a", GgmlType::f32, {32, 2}}})),
      Catch::Contains("has a .lora_a but no .lora_b"));
  CHECK_THROWS_WITH(
      GgufAdapter::open(write_with(md, {{"blk.0.attn_q.weight", GgmlType::f32, {32, 2}}})),
      Catch::Contains("neither a .lora_a nor a .lora_b"));
  CHECK_THROWS_WITH(
      GgufAdapter::open(write_with(md, {{"blk.0.attn_q.weight.lora_a", GgmlType::f32, {32, 2}},
                                        {"blk.0.attn_q.weight.lora_b", GgmlType::f32, {3, 32}}})),
      Catch::Contains("lora_a has rank 2 and lora_b 3"));
  GgufMetadata no_type = md;
  no_type.erase("adapter.type");
  CHECK_THROWS_WITH(GgufAdapter::open(write_with(no_type, {})), Catch::Contains("'adapter.type'"));
  // Written for a qwen2-style model, read for a llama one.
  const GgufAdapter q(
      GgufFile::open(write_with(gguf_adapter_metadata(llama_model(true, false), 8),
                                {{"blk.0.attn_q.weight.lora_a", GgmlType::f32, {32, 2}},
                                 {"blk.0.attn_q.weight.lora_b", GgmlType::f32, {2, 32}}})));
  LoraSpec requested;
  requested.rank = 2;
  requested.alpha = 8;
  requested.targets = {"self_attn.q_proj"};
  CHECK(q.config(requested).alpha == 8);
  CHECK(q.config(requested).targets == requested.targets);  // selects what the file adapts
  requested.targets = {"q_proj", "v_proj"};
  CHECK(q.config(requested).targets == std::vector<std::string>{"q_proj"});
  CHECK_THROWS_WITH(q.read("model.layers.0.self_attn.q_proj.weight", false, {2, 32}, m),
                    Catch::Contains("is an adapter for a qwen2 model; this model is llama"));
}
