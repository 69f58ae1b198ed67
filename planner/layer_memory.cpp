#include "planner/layer_memory.h"

#include <unordered_set>

#include "graph/op_schema.h"

namespace remat {

LayerActivationBytes layer_activation_bytes(const Graph& g, int block, uint64_t alignment) {
  const Block& b = g.blocks.at(static_cast<size_t>(block));
  std::unordered_set<TensorId> own;  // activations the block's forward makes, chain tensors aside
  for (int op : b.forward_ops)
    for (TensorId t : g.ops[static_cast<size_t>(op)].outputs)
      if (!g.tensor(t).persistent && t != b.output) own.insert(t);
  std::unordered_set<TensorId> read, frozen_only;
  for (int op : b.backward_ops) {
    const Op& o = g.ops[static_cast<size_t>(op)];
    for (TensorId t : o.inputs)
      if (own.count(t)) read.insert(t);
    // The x a frozen matmul's weight gradient would have read.
    if (o.kind == OpKind::matmul_backward && o.attrs.frozen) {
      const TensorId x = g.ops[static_cast<size_t>(o.forward_op)].inputs[slot::matmul::x];
      if (own.count(x)) frozen_only.insert(x);
    }
  }
  LayerActivationBytes r;
  for (TensorId t : read) r.saved += align_up(g.tensor(t).bytes(), alignment);
  for (TensorId t : frozen_only)
    if (!read.count(t)) r.frozen_weight_inputs += align_up(g.tensor(t).bytes(), alignment);
  return r;
}

}  // namespace remat
