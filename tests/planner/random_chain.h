// Random heterogeneous chains for planner tests: blocks with or without attention/MLP, random
// head counts and MLP widths, optional dropout, over the same builder that makes GPT-2.
#pragma once

#include <random>

#include "graph/autodiff.h"
#include "graph/gpt_builder.h"

namespace remat::testing {

inline Graph random_training_chain(uint32_t seed, int min_blocks, int max_blocks) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ChainSpec spec;
  const int heads_choice[] = {1, 2, 4};
  spec.dim = 8 * pick(1, 4) * 4;
  spec.vocab = pick(16, 300);
  spec.ctx = 32;
  const int blocks = pick(min_blocks, max_blocks);
  for (int i = 0; i < blocks; ++i) {
    BlockSpec b;
    const int kind = pick(0, 4);
    b.attention = kind != 0;
    b.mlp = kind != 1;
    b.heads = heads_choice[pick(0, 2)];
    b.hidden = spec.dim * pick(1, 8);
    spec.blocks.push_back(b);
  }
  TrainShape shape;
  shape.batch = pick(1, 4);
  shape.seq = pick(4, 32);
  shape.dropout = pick(0, 1) ? 0.1f : 0.0f;
  Graph g = build_chain(spec, shape);
  autodiff(g);
  return g;
}

}  // namespace remat::testing
