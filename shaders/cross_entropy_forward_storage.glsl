// The cross-entropy forward through storage buffers, included by cross_entropy_forward.comp and
// its f16/bf16 wrappers (act16.glsl: the logits are an activation; the losses are fp32).
#include "act16.glsl"
#include "cross_entropy_params.h"

// Per-position cross-entropy of softmax(logits) against the targets, fused and numerically
// stable: loss = log(sum_v exp(l_v - max)) + max - l_target. The mean over the trained positions
// is the reader's. An ignored target (REMAT_IGNORE_TARGET) gives 0 without reading its row; any
// other target outside the vocabulary gives a NaN loss. Variants: see cross_entropy_rows.glsl.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { ACT_T logits[]; };
#define LOGIT(k) LOAD_ACT(logits[k])
layout(std430, binding = 1) readonly buffer Targets { uint targets[]; };
layout(std430, binding = 2) writeonly buffer Losses { float losses[]; };
layout(push_constant) uniform Push { CrossEntropyParams p; };

#include "cross_entropy_forward_body.glsl"
