// A llama-tiny training graph whose attention layers carry a sliding window and a score scale,
// set on the forward ops as a model builder sets them (Gemma 3's local layers). Layer i gets
// window first_window + i, distinct per layer, so that a backward or a recompute which took
// another layer's attributes (or none) shows.
#pragma once

#include "graph/autodiff.h"
#include "graph/residual_fusion.h"
#include "graph/cost_model.h"
#include "graph/model_builder.h"

namespace remat::testing {

inline Graph windowed_llama(const TrainShape& shape, int first_window, float scale) {
  Graph g = build_model(ModelConfig::preset("llama-tiny"), shape);
  int layer = 0;
  for (Op& op : g.ops)
    if (op.kind == OpKind::gqa_attention) {
      op.attrs.window = first_window + layer++;
      op.attrs.attn_scale = scale;
      estimate_op_work(g, op);  // the builder prices an op as it emits it
    }
  if (shape.fuse_residuals) fuse_residuals(g);  // as build_training_model does
  autodiff(g);
  return g;
}

}  // namespace remat::testing
