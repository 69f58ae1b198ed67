// The cross-entropy backward through storage buffers, included by cross_entropy_backward.comp
// and its f16/bf16 wrappers (act16.glsl: the logits are an activation; dlogits is a gradient,
// always fp32).
#include "act16.glsl"
#include "cross_entropy_params.h"

// dlogits = scale * (softmax(logits) - onehot(target)), always overwritten: the head's logits
// gradient has no other contribution. Recomputes the row max and sum exactly as the forward
// does (cross_entropy_rows.glsl). An ignored target's row (REMAT_IGNORE_TARGET) is all zeros;
// any other target outside the vocabulary gives a NaN row. The scale is read when the kernel
// runs (cross_entropy_params.h says why).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { ACT_T logits[]; };
#define LOGIT(k) LOAD_ACT(logits[k])
layout(std430, binding = 1) readonly buffer Targets { uint targets[]; };
layout(std430, binding = 2) writeonly buffer DLogits { float dlogits[]; };
#define STORE_DLOGIT(k, d) dlogits[k] = (d)
layout(std430, binding = 3) readonly buffer Scales { float scales[]; };
layout(push_constant) uniform Push { CrossEntropyParams p; };

#include "cross_entropy_backward_body.glsl"
