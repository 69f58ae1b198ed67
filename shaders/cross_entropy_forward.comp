#version 450
#extension GL_GOOGLE_include_directive : require
#include "cross_entropy_params.h"

// Per-position cross-entropy of softmax(logits) against the targets, fused and numerically
// stable: loss = log(sum_v exp(l_v - max)) + max - l_target. The mean over the trained positions
// is the reader's. An ignored target (REMAT_IGNORE_TARGET) gives 0 without reading its row; any
// other target outside the vocabulary gives a NaN loss. Variants: see cross_entropy_rows.glsl.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
#define LOGIT(k) logits[k]
layout(std430, binding = 1) readonly buffer Targets { uint targets[]; };
layout(std430, binding = 2) writeonly buffer Losses { float losses[]; };
layout(push_constant) uniform Push { CrossEntropyParams p; };

#include "cross_entropy_forward_body.glsl"
