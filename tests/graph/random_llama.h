// Random small Llama-family configs for graph and planner tests: tied or untied head, q/k/v
// biases or not, one key/value head, fewer than the query heads, or as many; Qwen3's q/k norms
// and explicit head size, and Llama 3's RoPE scaling, drawn last so earlier draws keep their
// values.
#pragma once

#include <random>

#include "graph/model_config.h"

namespace remat::testing {

struct LlamaCase {
  ModelConfig model;
  TrainShape shape;
};

inline LlamaCase random_llama(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  LlamaCase c;
  ModelConfig& m = c.model;
  m = ModelConfig::preset("llama-tiny");
  const int head_dims[] = {2, 4, 8};
  const int kv_choice[] = {1, 2, 3};
  m.kv_heads = kv_choice[pick(0, 2)];
  const int groups = pick(1, 3);  // query heads per key/value head (1: plain multi-head)
  m.heads = m.kv_heads * groups;
  m.dim = m.heads * head_dims[pick(0, 2)];
  m.layers = pick(1, 6);
  m.ffn = pick(1, 4) * 8 + pick(0, 7);
  m.vocab = pick(16, 300);
  m.ctx = 32;
  m.tied_head = pick(0, 1) == 1;
  m.qkv_bias = pick(0, 1) == 1;
  m.rope_theta = pick(0, 1) ? 10000.0f : 500000.0f;
  c.shape.batch = pick(1, 4);
  c.shape.seq = pick(3, 32);
  m.qk_norm = !m.qkv_bias && pick(0, 2) == 0;
  if (pick(0, 2) == 0) m.head_size = 4 * pick(1, 3);
  if (m.head_size == m.dim / m.heads) m.head_size = 0;
  if (pick(0, 3) == 0) {
    m.rope_scaling = RopeScaling::llama3;
    m.llama3 = {8.0f, 1.0f, 4.0f, 16};
  }
  return c;
}

}  // namespace remat::testing
