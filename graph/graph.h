// The training graph: tensors, ops, and the chain of blocks the planner reasons about.
// A block reads only persistent tensors, its chain input and its own tensors; that is what lets
// the planner recompute a block from its input alone.
#pragma once

#include <string>
#include <vector>

#include "graph/op.h"
#include "graph/tensor.h"

namespace remat {

// One link of the model chain (embedding, a transformer block, the head).
struct Block {
  std::string name;              // "embedding", "h.3", "head"
  TensorId input = kNoTensor;    // chain input x_i (output of the previous block); none for block 0
  TensorId output = kNoTensor;   // chain output x_{i+1}; none for the last block
  std::vector<int> forward_ops;  // indices into Graph::ops, in execution order
  std::vector<int> backward_ops;  // filled by autodiff, in execution order
};

// One low-rank adapter (graph/lora.h): y = x·W (+b) + scale·(x·Aᵀ)·Bᵀ next to a frozen matmul.
struct LoraAdapter {
  std::string module;           // the weight's name minus ".weight": "h.3.attn.c_attn"
  TensorId base = kNoTensor;    // the frozen weight W
  TensorId a = kNoTensor;       // lora_A [R, in]
  TensorId b = kNoTensor;       // lora_B [out, R]
  float scale = 1.0f;           // alpha / R
  bool fan_in_fan_out = false;  // W is [in, out] (HF Conv1D) rather than [out, in] (nn.Linear)
};

struct Graph {
  std::vector<Tensor> tensors;        // indexed by TensorId
  std::vector<Op> ops;                // forward ops, then backward ops, then optimizer ops
  std::vector<Block> blocks;          // the chain, in forward order
  std::vector<TensorId> parameters;   // trained, in a fixed order (the optimizer's and layout's)
  std::vector<TensorId> frozen;       // parameters never trained: no gradient, no moments
  std::vector<LoraAdapter> adapters;  // LoRA adapters (their A and B are in parameters)
  std::vector<TensorId> parameter_grads;  // parallel to parameters (after autodiff)
  std::vector<TensorId> adam_m;           // parallel to parameters (after autodiff)
  std::vector<TensorId> adam_v;           // parallel to parameters (after autodiff)
  std::vector<TensorId> grad_of;          // per tensor: its gradient tensor, or kNoTensor
  std::vector<int> optimizer_ops;         // grad_norm, then one adamw per parameter
  TensorId tokens = kNoTensor;            // [B,T] u32
  TensorId targets = kNoTensor;           // [B,T] u32
  TensorId positions = kNoTensor;         // [B,T] u32, packed rows only (TrainShape::packed)
  TensorId losses = kNoTensor;            // [B,T] f32, read back by the host
  bool row_loss_scales = false;           // TrainShape::row_loss_scales
  TensorId logits = kNoTensor;            // [B·T,V] head output (sampling reads it); GPT only

  TensorId add_tensor(std::string name, std::vector<int64_t> shape, DType dtype, Role role,
                      int block, bool persistent);
  int add_op(Op op);
  const Tensor& tensor(TensorId id) const { return tensors.at(static_cast<size_t>(id)); }

  // Index of the op that produces `id` first (forward producer or first gradient writer), -1 if
  // none.
  std::vector<int> first_producers() const;
};

// Where each forward op runs and which forward ops write and read each tensor. Positions come
// from the blocks' op lists: LoRA appends its ops to Graph::ops out of execution order.
struct ForwardIndex {
  std::vector<int> position;                // per op: its place in forward order, -1 if none
  std::vector<int> producer;                // per tensor: the forward op writing it, or -1
  std::vector<std::vector<int>> consumers;  // per tensor: the forward ops reading it

  // Place of `op` in forward order; -1 for no op (a tensor nothing here makes).
  int at(int op) const { return op < 0 ? -1 : position[static_cast<size_t>(op)]; }
  // `op` is the one forward op that reads `t`.
  bool only_reader(TensorId t, int op) const {
    return consumers[static_cast<size_t>(t)] == std::vector<int>{op};
  }
  // Every forward op that reads `t`, but `except`, runs before `op`.
  bool read_before(TensorId t, int except, int op) const {
    for (int c : consumers[static_cast<size_t>(t)])
      if (c != except && at(c) > at(op)) return false;
    return true;
  }
};
ForwardIndex forward_index(const Graph& g);

}  // namespace remat
