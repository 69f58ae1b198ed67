#include "graph/residual_fusion.h"

#include <vector>

#include "graph/cost_model.h"
#include "graph/op_schema.h"

namespace remat {
namespace {

// Whether residual op `ri` can join matmul `mi`, the producer of its b.
bool fusable(const Graph& g, int ri, int mi, const ForwardIndex& f) {
  namespace s = slot::residual;
  const Op& r = g.ops[static_cast<size_t>(ri)];
  const TensorId a = r.inputs.at(s::a), b = r.inputs.at(s::b);
  if (r.attrs.scale != 1.0f || a == b || mi < 0) return false;
  const Op& m = g.ops[static_cast<size_t>(mi)];
  if (m.kind != OpKind::matmul || m.attrs.adds_residual || m.block != r.block) return false;
  if (!f.only_reader(b, ri)) return false;
  const Tensor& at = g.tensor(a);
  if (at.role != Role::activation || at.dtype != g.tensor(r.outputs.at(0)).dtype) return false;
  // a must exist when m runs (made before it, or a chain input made by no op here).
  if (f.at(f.producer[static_cast<size_t>(a)]) >= f.at(mi)) return false;
  return f.read_before(a, ri, mi);
}

}  // namespace

void fuse_residuals(Graph& g) {
  const ForwardIndex f = forward_index(g);
  std::vector<bool> gone(g.ops.size(), false);
  for (const Block& b : g.blocks)
    for (int ri : b.forward_ops) {
      const Op& r = g.ops[static_cast<size_t>(ri)];
      if (r.kind != OpKind::residual) continue;
      const int mi = f.producer[static_cast<size_t>(r.inputs.at(slot::residual::b))];
      if (!fusable(g, ri, mi, f)) continue;
      Op& m = g.ops[static_cast<size_t>(mi)];
      m.inputs.push_back(r.inputs.at(slot::residual::a));
      m.attrs.adds_residual = true;
      m.outputs = {r.outputs.at(slot::residual::y)};
      estimate_op_work(g, m);
      gone[static_cast<size_t>(ri)] = true;
    }
  // Drop the fused residuals; the blocks' op indices follow.
  std::vector<int> index(g.ops.size(), -1);
  std::vector<Op> kept;
  for (size_t i = 0; i < g.ops.size(); ++i)
    if (!gone[i]) {
      index[i] = static_cast<int>(kept.size());
      kept.push_back(std::move(g.ops[i]));
    }
  g.ops = std::move(kept);
  for (Block& b : g.blocks) {
    std::vector<int> ops;
    for (int i : b.forward_ops)
      if (index[static_cast<size_t>(i)] >= 0) ops.push_back(index[static_cast<size_t>(i)]);
    b.forward_ops = std::move(ops);
  }
}

}  // namespace remat
