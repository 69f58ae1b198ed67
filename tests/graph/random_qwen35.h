// Random small Qwen3.5 configs for graph and planner tests: one to three gated-attention
// intervals of layers, value heads one to three times the key heads, partial RoPE, tied or untied
// head, packed rows or not, and a delta-rule chunk length that may or may not divide T (a
// multiple of the chunkwise kernels' 64-token block, so T runs past a block).
#pragma once

#include <random>

#include "graph/model_config.h"

namespace remat::testing {

struct Qwen35Case {
  ModelConfig model;
  TrainShape shape;
};

inline Qwen35Case random_qwen35(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Qwen35Case c;
  ModelConfig& m = c.model;
  m = ModelConfig::preset("qwen3.5-0.8b");
  Qwen35Layers& l = m.qwen35_layers;
  l.full_attention_interval = pick(2, 4);
  m.layers = l.full_attention_interval * pick(1, 2) + pick(0, 1);
  m.kv_heads = pick(1, 2);
  m.heads = m.kv_heads * pick(1, 2);
  m.head_size = 4 * pick(1, 3);  // half of it rotated: 1 to 3 pairs
  l.partial_rotary = 0.5f;
  l.mrope_section = {m.head_size / 4, 0, 0};
  m.dim = 8 * pick(2, 6);
  m.ffn = 8 * pick(1, 4);
  m.vocab = pick(16, 300);
  m.ctx = 200;
  m.tied_head = pick(0, 1) == 1;
  l.linear_key_heads = pick(1, 2);
  l.linear_value_heads = l.linear_key_heads * pick(1, 3);
  l.linear_key_head_dim = 4 * pick(1, 3);
  l.linear_value_head_dim = 4 * pick(1, 3);
  l.conv_kernel = pick(2, 4);
  l.mtp_layers = 0;
  c.shape.batch = pick(1, 3);
  c.shape.seq = pick(3, 200);
  c.shape.packed = pick(0, 1) == 1;
  const int chunks[] = {0, 64, 128, 192, 256};
  c.shape.delta_chunk = chunks[pick(0, 4)];
  return c;
}

// A small fixed Qwen3.5: four layers (three Gated DeltaNet, one gated attention), B 2, T 128:
// two of the chunkwise kernels' 64-token blocks, so 64 and 128 are two real chunk lengths.
inline Qwen35Case tiny_qwen35(int delta_chunk = 0, bool packed = false) {
  Qwen35Case c;
  ModelConfig& m = c.model;
  m = ModelConfig::preset("qwen3.5-0.8b");
  m.layers = 4;
  m.dim = 32;
  m.heads = 2;
  m.kv_heads = 1;
  m.head_size = 16;
  m.ffn = 48;
  m.vocab = 64;
  m.ctx = 160;
  m.qwen35_layers = {4, 2, 4, 8, 6, 4, 0.25f, 0, {2, 0, 0}, false};
  c.shape.batch = 2;
  c.shape.seq = 128;
  c.shape.delta_chunk = delta_chunk;
  c.shape.packed = packed;
  return c;
}

}  // namespace remat::testing
