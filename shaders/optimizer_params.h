// Push constants and the hyperparameter buffer of the optimizer kernels: AdamW and the global
// gradient norm used for clipping (shared by GLSL and C++, see push_constants.h for why every
// member is a 32-bit scalar).
#ifndef REMAT_OPTIMIZER_PARAMS_H
#define REMAT_OPTIMIZER_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// adamw.comp reads its hyperparameters from this struct in a small storage buffer (std430),
// not from push constants, so one recorded command buffer is replayed every step with the host
// rewriting only these 44 bytes (a new learning rate, the next step's bias corrections). Other
// kernels read their per-step values from the same block: dropout the step, the cross-entropy
// backward the loss scale.
// Differences like 1 - beta2 are computed on the host in double, as PyTorch computes them in
// Python: in float, 1 - 0.999f is off by 1.3e-5 relative, which would bias v by as much.
struct AdamWHyper {
  float lr;                // learning rate
  float beta1;             // first-moment decay
  float beta2;             // second-moment decay
  float one_minus_beta1;   // 1 - beta1
  float one_minus_beta2;   // 1 - beta2
  float eps;               // added to sqrt(v_hat)
  float weight_decay;      // decoupled decay coefficient (applied where AdamWParams.decay is 1)
  float bias_correction1;  // 1 - beta1^t
  float bias_correction2;  // 1 - beta2^t
  uint step;               // t, counted from 1 (not read by the kernel; for inspection)
  float loss_scale;        // 1 / (trained targets of the whole optimizer step): the mean loss's
                           // gradient scale, read by cross_entropy_backward.comp
};

// adamw.comp: one parameter tensor of `count` floats, updated in place with its m and v.
// decay 1: apply weight decay (2-D tensors only, GPT-2 convention). clip 1: multiply the gradient
// by the clip scale that grad_norm_finalize.comp wrote (GradNormResult.clip_scale) first.
struct AdamWParams {
  uint count;
  uint decay;
  uint clip;
};
REMAT_PUSH_WORDS(AdamWParams, 3)

// grad_norm_partial.comp: invocation i < slots writes partials[i] = sum over j of
// grad[i + j * slots]^2, in increasing j. One dispatch per parameter tensor, each bound to its
// own range of one partials buffer (disjoint ranges need no barriers between the dispatches).
struct GradNormPartialParams {
  uint count;
  uint slots;
};
REMAT_PUSH_WORDS(GradNormPartialParams, 2)

// grad_norm_finalize.comp: one invocation sums partials[0, count) in order and writes a
// GradNormResult. max_norm 0 disables clipping (scale 1).
struct GradNormFinalizeParams {
  uint count;
  float max_norm;
};
REMAT_PUSH_WORDS(GradNormFinalizeParams, 2)

// One piece of one parameter tensor in the optimizer table (adamw_table*.comp,
// grad_norm_table*.comp): a tensor, or the part of it that fits one binding. The table is written
// once when a session is created (the plan is static) and read by one AdamW and one gradient-norm
// dispatch per binding window (runtime/kernels/optimizer_table.h). Offsets are in floats from the
// start of each operand's window (the partials from the dispatch's partials range); the groups
// say which workgroups of each dispatch update this piece.
struct OptimizerPiece {
  uint param;         // the parameter's first float in the param window
  uint grad;          // its gradient's first float in the grad window
  uint m;             // its first moment's first float in the m window
  uint v;             // its second moment's first float in the v window
  uint count;         // floats in the piece
  uint decay;         // 1: apply weight decay (2-D tensors)
  uint slots;         // gradient-norm partial sums of this piece (grad_norm_slots(count))
  uint partials;      // its first partial sum in the dispatch's partials range
  uint adamw_group;   // its first workgroup in the AdamW dispatch
  uint adamw_groups;  // its workgroups there (a grid stride over the piece)
  uint norm_group;    // its first workgroup in the gradient-norm dispatch
  uint norm_groups;   // its workgroups there (64 slots, or 64 vec4 of slots, each)
};

// adamw_table*.comp and grad_norm_table*.comp: table entries [first, first + pieces) in one
// dispatch of `groups` workgroups, laid out 2-D (x up to 65535) when there are more. clip as in
// AdamWParams (grad_norm_table ignores it).
struct OptimizerTableParams {
  uint first;
  uint pieces;
  uint groups;
  uint clip;
};
REMAT_PUSH_WORDS(OptimizerTableParams, 4)

// What grad_norm_finalize.comp writes (std430 storage buffer), read by adamw.comp.
struct GradNormResult {
  float norm;        // global L2 norm of all gradients
  float clip_scale;  // min(1, max_norm / (norm + 1e-6)), as torch.nn.utils.clip_grad_norm_
};

#ifdef __cplusplus
static_assert(sizeof(AdamWHyper) == 44, "AdamWHyper must be eleven 32-bit scalars (std430)");
static_assert(sizeof(GradNormResult) == 8, "GradNormResult must be two 32-bit scalars (std430)");
static_assert(sizeof(OptimizerPiece) == 48, "OptimizerPiece must be twelve 32-bit scalars");
}  // namespace remat::push
#endif
#endif  // REMAT_OPTIMIZER_PARAMS_H
