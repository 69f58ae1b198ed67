// Random heterogeneous chains for planner tests: blocks with or without attention/MLP, random
// head counts and MLP widths, optional dropout, over the same builder that makes GPT-2.
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "graph/autodiff.h"
#include "graph/gpt_builder.h"
#include "graph/lora.h"

namespace remat::testing {

// The forward graph of a random chain; with `lora`, LoRA adapters of a random rank on a random
// non-empty subset of its linear layers.
inline Graph random_chain(uint32_t seed, int min_blocks, int max_blocks, bool lora = false) {
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
  if (!lora) return g;
  LoraSpec l;
  l.rank = pick(1, 9);
  l.alpha = pick(0, 1) ? 0.0 : pick(1, 32);
  std::vector<std::string> pool;  // targets that exist in this chain
  for (const BlockSpec& b : spec.blocks) {
    if (b.attention) pool.insert(pool.end(), {"attn.c_attn", "attn.c_proj"});
    if (b.mlp) pool.insert(pool.end(), {"mlp.c_fc", "mlp.c_proj"});
  }
  for (const std::string& t : pool)
    if (pick(0, 1) && std::find(l.targets.begin(), l.targets.end(), t) == l.targets.end())
      l.targets.push_back(t);
  if (l.targets.empty())
    l.targets.push_back(pool[static_cast<size_t>(pick(0, int(pool.size()) - 1))]);
  apply_lora(g, l);
  return g;
}

inline Graph random_training_chain(uint32_t seed, int min_blocks, int max_blocks,
                                   bool lora = false) {
  Graph g = random_chain(seed, min_blocks, max_blocks, lora);
  autodiff(g);
  return g;
}

}  // namespace remat::testing
