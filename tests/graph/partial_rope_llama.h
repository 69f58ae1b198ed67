// A llama-tiny training graph whose rope ops turn only the first `rotary_dims` elements of each
// head (partial RoPE, Qwen3.5's gated attention), set on the forward ops as a model builder would
// set them; the backwards and recomputes take them from there.
#pragma once

#include "graph/autodiff.h"
#include "graph/cost_model.h"
#include "graph/model_builder.h"
#include "graph/residual_fusion.h"

namespace remat::testing {

inline Graph partial_rope_llama(const TrainShape& shape, int rotary_dims) {
  Graph g = build_model(ModelConfig::preset("llama-tiny"), shape);
  for (Op& op : g.ops)
    if (op.kind == OpKind::rope) {
      op.attrs.rotary_dims = rotary_dims;
      estimate_op_work(g, op);  // the builder prices an op as it emits it
    }
  if (shape.fuse_residuals) fuse_residuals(g);  // as build_training_model does
  autodiff(g);
  return g;
}

}  // namespace remat::testing
