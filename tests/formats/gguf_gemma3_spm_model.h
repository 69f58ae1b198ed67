// A small Gemma-3-shaped GGUF model that carries Gemma 3's real SentencePiece vocabulary (262144
// ids) and chat template, as llama.cpp's converter writes them
// (tests/formats/gguf_tokenizer_files.h): one layer of 64 channels, 4 query heads of 16 sharing 2
// key/value heads, sliding window 4 on every other layer, random weights. `remat train --init` and
// the C API read its tokenizer and template from the file.
#pragma once

#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_model_writer.h"
#include "graph/model_builder.h"
#include "tests/formats/gguf_tokenizer_files.h"

namespace remat::test {

inline ModelConfig gemma3_spm_model_config() {
  ModelConfig m = ModelConfig::preset("llama-tiny");
  m.layers = 1;
  m.dim = 64;
  m.ffn = 96;
  m.ctx = 128;
  m.vocab = 262144;
  m.tied_head = true;
  m.qk_norm = true;
  m.gemma3 = true;
  m.gemma = {4, 2, 10000.0f, 16.0f};
  return m;
}

// Writes the model as <folder>/gemma3-spm.gguf (the tokenizer-only file beside it).
inline std::filesystem::path write_gemma3_spm_model(const TempFolder& folder) {
  const GgufSample tokenizer = write_spm_sample(folder, "gemma3");
  GgufModelOptions o;
  const GgufFile file = GgufFile::open(tokenizer.gguf);
  for (const GgufMetadata::Entry& e : file.metadata().entries())
    if (e.key.rfind("tokenizer.", 0) == 0) o.extra.set(e.key, e.value);
  const ModelConfig m = gemma3_spm_model_config();
  const Graph g = build_model(m, TrainShape{1, 8});
  std::vector<GgufSourceTensor> tensors;
  for (TensorId id : g.parameters) {
    const Tensor& t = g.tensors.at(static_cast<std::size_t>(id));
    tensors.push_back({t.name, t.shape});
  }
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  const std::filesystem::path path = folder.path() / "gemma3-spm.gguf";
  write_gguf_model(
      path, m, tensors,
      [&](std::size_t i, uint64_t, std::span<float> out) {
        for (float& v : out) v = tensors[i].shape.size() == 1 ? 0.0f : normal(rng);
      },
      o);
  return path;
}

}  // namespace remat::test
