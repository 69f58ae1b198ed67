// The check of a GGUF file remat wrote against llama.cpp itself
// (tests/training/llama_cpp_library.h), shared by the llama.cpp tests: small models with random
// weights far from uniform predictions, remat's log-probabilities of a few candidates at each
// position, and the largest difference from llama.cpp's on the same tokens.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/ignore_target.h"
#include "formats/gguf.h"
#include "formats/gguf_model_writer.h"
#include "formats/gguf_writer.h"
#include "formats/safetensors.h"
#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"
#include "tests/training/llama_cpp_library.h"

#if REMAT_HAVE_LLAMA_H
namespace remat::test {

namespace fs = std::filesystem;

// How far llama.cpp's log-probabilities may be from remat's. llama.cpp's CPU path sums in other
// orders than remat's kernels, in float too: llama and qwen2 agree to about 1e-5. ggml's CPU GELU
// (gpt2's MLP) reads a table of f16 values at the f16 rounding of its input, an error of up to
// about 1e-3 of each activation, so gpt2 and gemma3 (GeGLU, the same table) agree to about 1e-3
// only. A wrong adapter moves them by far more than ten times either.
inline double tolerance(const ModelConfig& m) {
  return m.arch == Architecture::gpt2 || m.gemma3 ? 1e-2 : 1e-3;
}
inline constexpr int kSeq = 8;

inline ModelConfig llama(bool qkv_bias) {
  ModelConfig m;
  m.arch = Architecture::llama;
  m.layers = 2;
  m.dim = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn = 96;
  m.vocab = 80;
  m.ctx = 32;
  m.qkv_bias = qkv_bias;
  m.tied_head = qkv_bias;  // qwen2 tied, llama untied: both heads
  m.rope_theta = 10000.0f;
  m.norm_eps = 1e-5f;
  return m;
}

inline SessionConfig config(const ModelConfig& m, int lora_rank) {
  SessionConfig c;
  c.model = m;
  c.shape.batch = 1;
  c.shape.seq = kSeq;
  c.policy = Policy::parse("none");
  c.pipeline_cache_dir = std::nullopt;
  c.lora.rank = lora_rank;
  c.lora.alpha = 6;
  return c;
}

// Weights far from the usual small initialisation, so the next token's distribution is far from
// uniform and every tensor moves it: matrices in ±0.3, norm weights in [0.7, 1.3] (Gemma's
// offsets in ±0.3, the same gains), biases ±0.2.
inline void load_random_weights(Session& s, const fs::path& dir) {
  const float gain0 = s.config().model.gemma3 ? -1.0f : 0.0f;
  const Plan& plan = s.plan();
  std::vector<NamedTensor> tensors;
  uint64_t seed = 100;
  for (TensorId id : plan.adapters.empty() ? plan.parameters : plan.frozen) {
    const Tensor& t = plan.tensors[std::size_t(id)].tensor;
    const std::size_t n = std::size_t(t.elements());
    const bool matrix = t.shape.size() == 2;
    const bool norm = !matrix && t.name.ends_with(".weight");
    std::vector<float> v = matrix ? test::random_floats(n, seed++, -0.3f, 0.3f)
                           : norm ? test::random_floats(n, seed++, 0.7f + gain0, 1.3f + gain0)
                                  : test::random_floats(n, seed++, -0.2f, 0.2f);
    tensors.push_back({t.name, t.shape, std::move(v)});
  }
  write_safetensors(dir / "base.safetensors", tensors);
  s.load(dir / "base.safetensors");
}

inline void randomize_adapters(Session& s) {
  std::vector<std::vector<float>> values;
  uint64_t seed = 500;
  for (const auto& [name, v] : s.parameters())
    values.push_back(test::random_floats(v.size(), seed++, -0.4f, 0.4f));
  s.set_trained_parameters(values);
}

inline std::vector<std::vector<uint32_t>> sequences(int vocab) {
  return {test::random_indices(kSeq, 7, uint32_t(vocab)),
          test::random_indices(kSeq, 8, uint32_t(vocab))};
}

// remat's log-probability of token `v` after tokens[0..t]: minus the loss of that one target.
inline double remat_log_p(Session& s, const std::vector<uint32_t>& tokens, int t, uint32_t v) {
  std::vector<uint32_t> targets(tokens.size(), kIgnoreTarget);
  targets[std::size_t(t)] = v;
  return -double(s.evaluate(tokens, targets));
}

inline double log_softmax(const std::vector<float>& logits, uint32_t v) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - top);
  return double(logits[v]) - top - std::log(sum);
}

// remat's log-probabilities at each position of each sequence, for a few candidates: the next
// token, and ids spread over the vocabulary.
struct Reference {
  std::vector<std::vector<uint32_t>> tokens;
  std::vector<std::vector<std::pair<uint32_t, double>>> log_p;  // [sequence * kSeq + t]
};

inline Reference remat_reference(Session& s) {
  const int vocab = s.config().model.vocab;
  Reference r{sequences(vocab), {}};
  for (const auto& tokens : r.tokens)
    for (int t = 0; t < kSeq; ++t) {
      std::vector<uint32_t> candidates = {tokens[std::size_t((t + 1) % kSeq)], 0,
                                          uint32_t(vocab / 3), uint32_t(vocab - 1)};
      std::vector<std::pair<uint32_t, double>> row;
      for (uint32_t v : candidates) row.emplace_back(v, remat_log_p(s, tokens, t, v));
      r.log_p.push_back(std::move(row));
    }
  return r;
}

// The largest |llama.cpp - remat| over every position and candidate.
inline double worst_difference(LlamaCppModel& model, const Reference& r, int vocab,
                               llama_adapter_lora* adapter = nullptr) {
  double worst = 0;
  for (std::size_t q = 0; q < r.tokens.size(); ++q) {
    const auto logits = model.logits(r.tokens[q], vocab, adapter);
    REQUIRE(logits.size() == std::size_t(kSeq));
    for (int t = 0; t < kSeq; ++t)
      for (const auto& [v, want] : r.log_p[q * kSeq + std::size_t(t)])
        worst = std::max(worst, std::abs(log_softmax(logits[std::size_t(t)], v) - want));
  }
  return worst;
}

// A copy of GGUF file `from` with every tensor's values passed through `edit(tensor, values)` and
// its metadata through `edit_keys`.
template <class Edit>
void rewrite_gguf(const fs::path& from, const fs::path& to, Edit edit,
                  const std::function<void(GgufMetadata&)>& edit_keys = {}) {
  const GgufFile f = GgufFile::open(from);
  std::vector<GgufTensorSpec> specs;
  for (const GgufTensor& t : f.tensors()) specs.push_back({t.name, t.type, t.ne});
  GgufMetadata md = f.metadata();
  if (edit_keys) edit_keys(md);
  GgufWriter out(to, md, specs);
  for (const GgufTensor& t : f.tensors()) {
    std::vector<float> v(t.elements());
    f.read(t, 0, std::as_writable_bytes(std::span(v)));
    edit(t, v);
    out.write(std::span<const float>(v));
  }
  out.commit();
}

inline std::string label(const ModelConfig& m) {
  return std::string(gguf_arch_name(gguf_arch_of(m)));
}

}  // namespace remat::test
#endif
