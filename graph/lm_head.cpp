#include "graph/lm_head.h"

#include <algorithm>

namespace remat {

int lm_head_chunk_rows(int loss_chunk, int rows) {
  return loss_chunk <= 0 ? 0 : std::min(loss_chunk, rows);
}

void emit_lm_head(Graph& g, BlockEmitter& e, const TrainShape& shape, TensorId x, TensorId weight) {
  const int64_t bt = int64_t{shape.batch} * shape.seq;
  const int64_t vocab = g.tensor(weight).shape.at(0);
  OpAttrs a;
  a.w_layout = WeightLayout::out_in;
  const int chunk = lm_head_chunk_rows(shape.loss_chunk, static_cast<int>(bt));
  if (chunk == 0) {
    g.logits = e.activation("head.logits", {bt, vocab});
    e.op(OpKind::matmul, {{"x", x}, {"weight", weight}}, {{"y", g.logits}}, a);
    e.op(OpKind::cross_entropy, {{"logits", g.logits}, {"targets", g.targets}},
         {{"losses", g.losses}});
    return;
  }
  a.chunk_rows = chunk;
  // A workspace: it holds one chunk's logits during the op and nothing after it. fp32 like the
  // backward's, which turns them into dlogits in place; with 16-bit activations the logits are
  // rounded to that type there, as a stored logits tensor would be.
  const TensorId logits = g.add_tensor("head.logits_chunk", {chunk, vocab}, DType::f32,
                                       Role::workspace, e.block(), false);
  e.op(OpKind::head_loss, {{"x", x}, {"weight", weight}, {"targets", g.targets}},
       {{"losses", g.losses}, {"logits", logits}}, a);
}

}  // namespace remat
