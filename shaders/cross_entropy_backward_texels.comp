#version 450
#extension GL_GOOGLE_include_directive : require
#include "cross_entropy_params.h"

// cross_entropy_backward.comp for CPU drivers, the logits read through an R32F texel view as in
// cross_entropy_forward_texels.comp, and whole vec4s of dlogits stored as vec4s (binding 4,
// cross_entropy_backward_body.glsl). dlogits may be the logits' own slice (the chunked head
// turns its logits into dlogits in place): an invocation reads each float of its row before it
// writes it and no other invocation touches the row, so the view never sees a value this
// dispatch wrote.
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform textureBuffer logits_texels;
#define LOGIT(k) texelFetch(logits_texels, int(k)).x
layout(std430, binding = 1) readonly buffer Targets { uint targets[]; };
layout(std430, binding = 2) writeonly buffer DLogits { float dlogits[]; };
#define STORE_DLOGIT(k, d) dlogits[k] = (d)
layout(std430, binding = 3) readonly buffer Scales { float scales[]; };
// dlogits again, as vec4s: the host binds the same slice here as at binding 2.
layout(std430, binding = 4) writeonly buffer DLogits4 { vec4 dlogits4[]; };
#define STORE_DLOGIT4(q, d) dlogits4[q] = (d)
layout(push_constant) uniform Push { CrossEntropyParams p; };

#include "cross_entropy_backward_body.glsl"
