// A GGUF model as remat trains it (formats/gguf_model.h): the config from its keys, and its tensors
// under remat's names and Hugging Face layout, read from files written the way llama.cpp's
// converter writes them (llama's q/k rows permuted, gpt2's matrices transposed).
#include "formats/gguf_model.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/half_float.h"
#include "formats/gguf_blocks.h"
#include "formats/gguf_qwen35.h"
#include "formats/gguf_rope_freqs.h"
#include "formats/gguf_writer.h"
#include "formats/model_weights.h"
#include "formats/weight_files.h"
#include "graph/model_builder.h"
#include "tests/support/gguf_model_files.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

using Param = test::GgufParam;

std::vector<Param> random_params(const ModelConfig& m, uint32_t seed) {
  return test::random_gguf_params(m, seed);
}

using test::write_gguf_model;

GgufMetadata llama_metadata(const ModelConfig& m, const std::string& arch) {
  return test::gguf_model_keys(m, arch);
}

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("remat_gguf_model_" + std::to_string(::getpid()) + name);
}

ModelConfig odd_llama() {
  ModelConfig m = ModelConfig::preset("llama-tiny");
  m.layers = 2;
  m.dim = 48;
  m.heads = 6;
  m.kv_heads = 2;
  m.ffn = 80;
  m.vocab = 61;
  m.ctx = 32;
  m.tied_head = false;
  return m;
}

}  // namespace

TEST_CASE("a llama GGUF file gives back the Hugging Face tensors, q and k rows unpermuted") {
  const ModelConfig m = odd_llama();
  const std::vector<Param> params = random_params(m, 11);
  const fs::path path = temp_file("llama.gguf");
  write_gguf_model(path, params, m, GgufArch::llama, GgmlType::f32);
  const WeightFiles w = WeightFiles::open(path);
  REQUIRE(w.gguf());
  CHECK(w.gguf()->model() == m);
  CHECK(w.gguf()->first_quantized() == nullptr);
  std::vector<TensorSpec> specs;
  for (const Param& p : params) specs.push_back({p.name, p.shape});
  const auto matched = match_model_parameters(w.header(), specs, m);
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::vector<float> got(params[i].values.size());
    w.read(*matched[i], 0, got);
    INFO(params[i].name);
    CHECK(got == params[i].values);
    // Any piece reads the same values (pieces start mid-row).
    if (got.size() > 7) {
      std::vector<float> piece(got.size() - 7);
      w.read(*matched[i], 5, std::span(piece).first(piece.size() - 2));
      CHECK(std::equal(piece.begin(), piece.end() - 2, params[i].values.begin() + 5));
    }
  }
  fs::remove(path);
}

TEST_CASE(
    "a gpt2 GGUF file gives back Conv1D weights in [in, out] order, and qwen2 rows as stored") {
  ModelConfig g = ModelConfig::preset("tiny");
  g.layers = 1;
  g.dim = 32;
  g.heads = 4;
  g.vocab = 50;
  g.ctx = 16;
  const std::vector<Param> params = random_params(g, 5);
  const fs::path path = temp_file("gpt2.gguf");
  write_gguf_model(path, params, g, GgufArch::gpt2, GgmlType::f32);
  const WeightFiles w = WeightFiles::open(path);
  CHECK(w.gguf()->model() == g);
  std::vector<TensorSpec> specs;
  for (const Param& p : params) specs.push_back({p.name, p.shape});
  const auto matched = match_model_parameters(w.header(), specs, g);
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::vector<float> got(params[i].values.size());
    w.read(*matched[i], 0, got);
    INFO(params[i].name);
    CHECK(got == params[i].values);
    std::vector<float> tail(std::min<std::size_t>(got.size(), 37));
    w.read(*matched[i], got.size() - tail.size(), tail);
    CHECK(std::equal(tail.begin(), tail.end(), params[i].values.end() - tail.size()));
  }
  fs::remove(path);

  ModelConfig q = odd_llama();
  q.qkv_bias = true;
  q.tied_head = true;
  const std::vector<Param> qp = random_params(q, 9);
  write_gguf_model(path, qp, q, GgufArch::qwen2, GgmlType::bf16);
  const WeightFiles qw = WeightFiles::open(path);
  CHECK(qw.gguf()->model() == q);
  std::vector<TensorSpec> qspecs;
  for (const Param& p : qp) qspecs.push_back({p.name, p.shape});
  const auto qm = match_model_parameters(qw.header(), qspecs, q);
  for (std::size_t i = 0; i < qp.size(); ++i) {
    std::vector<float> got(qp[i].values.size());
    qw.read(*qm[i], 0, got);
    for (std::size_t k = 0; k < got.size(); ++k) {
      // bf16 storage rounds to nearest even (matrices only; vectors stay f32).
      const float want =
          qp[i].shape.size() == 2 ? bf16_to_float(float_to_bf16(qp[i].values[k])) : qp[i].values[k];
      REQUIRE(got[k] == want);
    }
  }
  fs::remove(path);
}

TEST_CASE("a quantized GGUF tensor reads as its blocks decode, rows in Hugging Face order") {
  ModelConfig m = odd_llama();
  m.dim = 64;  // rows of whole q8_0 blocks
  m.heads = 4;
  // One llama q_proj of 64 x 64 in q8_0: random blocks, then the decoded rows unpermuted.
  GgufMetadata md = llama_metadata(m, "llama");
  const uint64_t rows = 64, cols = 64, blocks = rows * cols / 32;
  std::vector<std::byte> raw(blocks * 34);
  std::mt19937 rng(3);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint16_t d = float_to_f16(0.01f * float(b % 7 + 1));
    std::memcpy(&raw[b * 34], &d, 2);
    for (int k = 0; k < 32; ++k) raw[b * 34 + 2 + k] = std::byte(rng() & 0xff);
  }
  std::vector<float> stored(rows * cols);
  decode_blocks(GgmlType::q8_0, raw, stored);
  const fs::path path = temp_file("q8.gguf");
  {
    std::vector<float> embd(static_cast<std::size_t>(m.vocab * m.dim), 0.25f);
    GgufWriter w(path, md,
                 {{"token_embd.weight", GgmlType::f32, {uint64_t(m.dim), uint64_t(m.vocab)}},
                  {"blk.0.attn_q.weight", GgmlType::q8_0, {cols, rows}}});
    w.write(std::span<const float>(embd));
    w.write(std::span<const std::byte>(raw));
    w.commit();
  }
  GgufWeights g(GgufFile::open(path));
  REQUIRE(g.first_quantized() != nullptr);
  CHECK(g.first_quantized()->name == "blk.0.attn_q.weight");
  const SafetensorsEntry* q = g.header().find("model.layers.0.self_attn.q_proj.weight");
  REQUIRE(q);
  CHECK(q->dtype == "q8_0");
  std::vector<float> got(rows * cols);
  g.read(*q, 0, got);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c)
      REQUIRE(got[r * cols + c] == stored[gguf_row_of(r, rows, m.heads) * cols + c]);
  fs::remove(path);
}

TEST_CASE("a GGUF model remat cannot train is refused naming the key") {
  const ModelConfig m = odd_llama();
  const fs::path path = temp_file("bad.gguf");
  const auto refused = [&](GgufMetadata md, const std::string& what) {
    {
      std::vector<float> embd(static_cast<std::size_t>(m.vocab * m.dim), 0.5f);
      GgufWriter w(path, md,
                   {{"token_embd.weight", GgmlType::f32, {uint64_t(m.dim), uint64_t(m.vocab)}}});
      w.write(std::span<const float>(embd));
      w.commit();
    }
    INFO(what);
    CHECK_THROWS_WITH(gguf_model_config(GgufFile::open(path)), Catch::Contains(what));
  };
  GgufMetadata md = llama_metadata(m, "llama");
  md.set("general.architecture", GgufValue::of("qwen3moe"));
  refused(md, "general.architecture is 'qwen3moe'");
  // A qwen35 file whose embedding is not the shape its qwen35.* keys give.
  refused(qwen35_gguf_metadata(ModelConfig::preset("qwen3.5-0.8b")),
          "token_embd.weight is not [248320, 1024] as the qwen35 keys say");
  md = llama_metadata(m, "llama");
  md.erase("llama.block_count");
  refused(md, "has no 'llama.block_count'");
  md = llama_metadata(m, "llama");
  md.set("llama.embedding_length", GgufValue::of("wide"));
  refused(md, "llama.embedding_length");
  md = llama_metadata(m, "llama");
  md.set("llama.rope.dimension_count", GgufValue::of(uint32_t(4)));
  refused(md, "rope.dimension_count is 4");
  md = llama_metadata(m, "llama");
  md.set("llama.attention.head_count", GgufValue::of(uint32_t(7)));
  refused(md, "heads");
  md = llama_metadata(m, "llama");
  md.set("llama.attention.key_length", GgufValue::of(uint32_t(8)));
  md.set("llama.attention.value_length", GgufValue::of(uint32_t(16)));
  refused(md, "value_length differs from key_length");
  fs::remove(path);
}

// A llama file of token_embd and rope_freqs (of `type` and `values`, as F32 or F16) only: enough
// for its config.
void write_rope_freqs_file(const fs::path& path, const ModelConfig& m, const std::string& arch,
                           const std::vector<float>& values, GgmlType type = GgmlType::f32) {
  std::vector<float> embd(static_cast<std::size_t>(m.vocab * m.dim), 0.5f);
  GgufWriter w(path, llama_metadata(m, arch),
               {{"token_embd.weight", GgmlType::f32, {uint64_t(m.dim), uint64_t(m.vocab)}},
                {"rope_freqs.weight", type, {values.size()}}});
  w.write(std::span<const float>(embd));
  if (type == GgmlType::f16) {
    std::vector<uint16_t> half;
    for (float v : values) half.push_back(float_to_f16(v));
    w.write(std::as_bytes(std::span(half)));
  } else {
    w.write(std::span<const float>(values));
  }
  w.commit();
}

TEST_CASE("a llama GGUF file's rope_freqs read as Llama 3's scaling, and others are refused") {
  // Heads of 8 at base 10000: wavelengths 6.3, 63, 628 and 6283, one in the band (250, 1000).
  // Tied: the file has no output tensor.
  ModelConfig m = odd_llama();
  m.tied_head = true;
  const Llama3Scaling s{4.0f, 1.0f, 4.0f, 1000};
  const std::vector<float> freqs = gguf_rope_freqs(s, m.rope_theta, m.head_dim());
  REQUIRE(freqs[2] > 1.0f);
  REQUIRE(freqs[2] < 4.0f);
  const fs::path path = temp_file("rope_freqs.gguf");
  write_rope_freqs_file(path, m, "llama", freqs);
  const ModelConfig read = gguf_model_config(GgufFile::open(path));
  CHECK(read.rope_scaling == RopeScaling::llama3);
  CHECK(read.llama3 == s);
  ModelConfig want = m;
  want.rope_scaling = RopeScaling::llama3;
  want.llama3 = s;
  CHECK(read == want);
  // Every factor 1: llama.cpp's unscaled RoPE.
  write_rope_freqs_file(path, m, "llama", std::vector<float>(4, 1.0f));
  CHECK(gguf_model_config(GgufFile::open(path)) == m);

  auto refused = [&](const std::string& why) {
    CHECK_THROWS_WITH(gguf_model_config(GgufFile::open(path)), Catch::Contains(why));
  };
  // One band value alone fits some llama3 rule; factors that fall again fit none.
  write_rope_freqs_file(path, m, "llama", {1, 2, 1.5f, 4});
  refused("rope_freqs.weight is not Llama 3's rope_scaling");
  write_rope_freqs_file(path, m, "llama", freqs, GgmlType::f16);
  refused("'rope_freqs.weight' is not 4 F32 values");
  write_rope_freqs_file(path, m, "llama", {1, 1, 1, 4, 4, 4, 4, 4});
  refused("'rope_freqs.weight' is not 4 F32 values");
  write_rope_freqs_file(path, m, "qwen2", freqs);
  refused("has 'rope_freqs.weight' in a qwen2 model");
  fs::remove(path);
}
