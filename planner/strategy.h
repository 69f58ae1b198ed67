// A checkpointing strategy over the block chain, in the shape of the rotor/revolve recursion
// (Griewank & Walther, "revolve", 2000; Beaumont et al., "Optimal checkpointing for heterogeneous
// chains", 2019). Node C(s, t) runs the backward of blocks s..t-1 given that block s's input is
// held and the gradient of block t's input is ready:
//   leaf   (t = s+1): backward of s, recomputing inside the block whatever it needs;
//   keep   : forward s keeping its intermediates at a KeepLevel, solve C(s+1, t), backward s;
//   split k: forward s..k-1 keeping nothing but x_k, solve C(k, t), then C(s, k).
// Every policy (none, every:K, selective, auto with nested segments) is such a tree; the first
// forward pass is simply the first time each block's forward runs.
#pragma once

#include <string>
#include <vector>

namespace remat {

// What a block's forward leaves behind for its backward.
enum class KeepLevel {
  none,  // only the chain output; intermediates are recomputed in the backward
  // input, matmul, attention (GPT-2's and grouped-query) and LoRA-merge outputs; the cheap
  // elementwise ops
  // (LayerNorm, RMSNorm, RoPE, GELU, SwiGLU, residual, dropout) are recomputed
  selective,
  all,  // everything its backward reads
};
const char* keep_level_name(KeepLevel l);

struct StrategyNode {
  enum class Kind { leaf, keep, split };
  Kind kind = Kind::leaf;            // which rule of the recursion
  int begin = 0;                     // s
  int end = 0;                       // t
  KeepLevel level = KeepLevel::all;  // keep: what block s keeps
  int split = -1;                    // split: k
  int first = -1;                    // keep: C(s+1,t) (or -1 when s+1 == t); split: C(k,t)
  int second = -1;                   // split: C(s,k)
};

struct Strategy {
  std::vector<StrategyNode> nodes;  // the tree; children are indices into nodes
  int root = -1;                    // C(0, n)

  int add(StrategyNode n);
  std::string describe() const;  // compact text, e.g. "keep(0,all) split(1|5) leaf(4)"
};

// One forward or backward of one block, in execution order.
struct Action {
  bool forward = true;               // false: backward (with in-block recompute as needed)
  int block = 0;                     // chain block index
  KeepLevel level = KeepLevel::all;  // forward: what stays held afterwards
  bool keep_input = true;            // forward: keep the block's input held afterwards
  bool operator==(const Action&) const = default;
};

std::vector<Action> strategy_actions(const Strategy& s);

// Fixed shapes the named policies use. `blocks` counts the whole chain (embedding ... head).
// Store everything at `level` (none: KeepLevel::all; selective: KeepLevel::selective).
Strategy store_all_strategy(int blocks, KeepLevel level);
// Single-level segments: `starts` are the first blocks of each segment (must include 0, strictly
// increasing). A one-block segment with stored[s] = true keeps block s at levels[s] in the first
// pass; other segments keep only their input and recompute their blocks at levels[] in the
// backward (the segment's last block recomputes inside its own backward). The last segment is
// never recomputed: its backward starts right after its forward.
Strategy single_level_strategy(int blocks, const std::vector<int>& starts,
                               const std::vector<bool>& stored,
                               const std::vector<KeepLevel>& levels);

}  // namespace remat
