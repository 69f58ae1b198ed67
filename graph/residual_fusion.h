// A residual whose second operand comes straight from a matmul becomes part of that matmul:
// y = a + x·W (+ bias) in one op (OpAttrs::adds_residual, the residual as the matmul's last
// input). The matmul's own output tensor is then never written, and the residual op is gone:
// one kernel pass, one dispatch and one [M,N] tensor fewer per residual, with the same bits
// (runtime: the texel matmul adds it before its store; other kernels add it in place after).
#pragma once

#include "graph/graph.h"

namespace remat {

// Fuses every residual y = a + b (scale 1) whose b is a matmul's output that nothing else reads,
// in the same block, where every other reader of a comes before that matmul (so its backward,
// which reads dy, runs before anything adds to a's gradient, which is dy's own tensor:
// graph/autodiff.cpp). Run on the forward graph, before autodiff.
void fuse_residuals(Graph& graph);

}  // namespace remat
