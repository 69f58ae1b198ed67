// Test helpers: a model's parameters (Hugging Face names, shapes and values) written as a GGUF file
// the way llama.cpp's converter lays them out (llama's q/k rows permuted, gpt2's matrices
// transposed; formats/gguf_names.h), with matrices stored as f32, f16, bf16 or q8_0 — q8_0
// quantized here as ggml's reference quantizer does (d = amax / 127 rounded to f16, q = round(x /
// d)). Kept independent of remat's own writers so the reading side is tested against this.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/half_float.h"
#include "formats/gguf_names.h"
#include "formats/gguf_writer.h"
#include "graph/model_builder.h"
#include "graph/model_config.h"

namespace remat::test {

struct GgufParam {
  std::string name;
  std::vector<int64_t> shape;  // Hugging Face, row-major
  std::vector<float> values;
};

// A two-layer Llama whose rows are whole blocks of every 32-value type: C64, 4 query heads of 16
// sharing 2 key/value heads, MLP 96 (default RoPE and norm settings).
inline ModelConfig block_llama_model(int vocab, int ctx, bool tied_head) {
  ModelConfig m = ModelConfig::preset("llama-tiny");
  m.layers = 2;
  m.dim = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn = 96;
  m.vocab = vocab;
  m.ctx = ctx;
  m.tied_head = tied_head;
  return m;
}

// Every parameter of `m` (Hugging Face names and shapes) with N(0, 0.5) values from `seed`.
inline std::vector<GgufParam> random_gguf_params(const ModelConfig& m, uint32_t seed) {
  const Graph g = build_model(m, TrainShape{1, 8});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<GgufParam> out;
  for (TensorId id : g.parameters) {
    const Tensor& t = g.tensors.at(static_cast<std::size_t>(id));
    GgufParam p{t.name, t.shape, std::vector<float>(static_cast<std::size_t>(t.elements()))};
    for (float& v : p.values) v = normal(rng);
    out.push_back(std::move(p));
  }
  return out;
}

// The stored (GGUF) values of a parameter and ggml's ne for them.
inline std::vector<float> gguf_stored_values(const GgufParam& p, const GgufLayout& l,
                                             std::vector<uint64_t>& ne) {
  const uint64_t cols = p.shape.size() == 2 ? uint64_t(p.shape[1]) : uint64_t(p.shape[0]);
  const uint64_t rows = p.shape.size() == 2 ? uint64_t(p.shape[0]) : 1;
  std::vector<float> s(p.values.size());
  if (l.transposed) {
    ne = {rows, cols};  // stored rows are Hugging Face columns
    for (uint64_t i = 0; i < rows; ++i)
      for (uint64_t o = 0; o < cols; ++o) s[o * rows + i] = p.values[i * cols + o];
    return s;
  }
  ne = p.shape.size() == 2 ? std::vector<uint64_t>{cols, rows} : std::vector<uint64_t>{cols};
  if (l.rope_heads > 0 && rows > 1) {
    for (uint64_t r = 0; r < rows; ++r)
      std::memcpy(&s[gguf_row_of(r, rows, l.rope_heads) * cols], &p.values[r * cols],
                  cols * sizeof(float));
    return s;
  }
  return p.values;
}

// q8_0 blocks of `values` (a multiple of 32), as ggml's quantize_row_q8_0_ref makes them.
inline std::vector<std::byte> quantize_q8_0(std::span<const float> values) {
  std::vector<std::byte> out(values.size() / 32 * 34);
  for (std::size_t b = 0; b < values.size() / 32; ++b) {
    float amax = 0;
    for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(values[b * 32 + k]));
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    const uint16_t dh = float_to_f16(d);
    std::memcpy(&out[b * 34], &dh, 2);
    for (int k = 0; k < 32; ++k)
      out[b * 34 + 2 + k] = std::byte(
          static_cast<uint8_t>(static_cast<int8_t>(std::lround(values[b * 32 + k] * id))));
  }
  return out;
}

inline GgufMetadata gguf_model_keys(const ModelConfig& m, const std::string& arch) {
  GgufMetadata md;
  md.set("general.architecture", GgufValue::of(arch));
  const std::string a = arch + ".";
  md.set(a + "block_count", GgufValue::of(uint32_t(m.layers)));
  md.set(a + "context_length", GgufValue::of(uint32_t(m.ctx)));
  md.set(a + "embedding_length", GgufValue::of(uint32_t(m.dim)));
  md.set(a + "feed_forward_length", GgufValue::of(uint32_t(m.mlp_width())));
  md.set(a + "attention.head_count", GgufValue::of(uint32_t(m.heads)));
  if (arch != "gpt2") {
    md.set(a + "attention.head_count_kv", GgufValue::of(uint32_t(m.kv_head_count())));
    md.set(a + "attention.layer_norm_rms_epsilon", GgufValue::of(m.norm_eps));
    md.set(a + "rope.freq_base", GgufValue::of(m.rope_theta));
    md.set(a + "rope.dimension_count", GgufValue::of(uint32_t(m.head_dim())));
  } else {
    md.set(a + "attention.layer_norm_epsilon", GgufValue::of(1e-5f));
  }
  return md;
}

// Writes `params` as llama.cpp's converter would; matrices in `type` (f32, f16, bf16 or q8_0),
// vectors in f32.
inline void write_gguf_model(const std::filesystem::path& path,
                             const std::vector<GgufParam>& params, const ModelConfig& m,
                             GgufArch arch, GgmlType type) {
  std::vector<GgufTensorSpec> specs;
  std::vector<std::vector<float>> data;
  for (const GgufParam& p : params) {
    const GgufLayout l = gguf_layout(p.name, arch, m.heads, m.kv_head_count());
    std::vector<uint64_t> ne;
    data.push_back(gguf_stored_values(p, l, ne));
    specs.push_back({*gguf_tensor_name(p.name, arch), ne.size() == 1 ? GgmlType::f32 : type, ne});
  }
  GgufWriter w(path, gguf_model_keys(m, std::string(gguf_arch_name(arch))), specs);
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (specs[i].type == GgmlType::q8_0)
      w.write(std::span<const std::byte>(quantize_q8_0(data[i])));
    else
      w.write(std::span<const float>(data[i]));
  }
  w.commit();
}

}  // namespace remat::test
