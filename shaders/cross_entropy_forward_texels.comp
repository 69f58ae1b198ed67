#version 450
#extension GL_GOOGLE_include_directive : require
#include "cross_entropy_params.h"

// cross_entropy_forward.comp for CPU drivers (DeviceQuirks::texel_fetch_beats_storage_loads): the
// logits are read through an R32F texel view, a branch-free gather on llvmpipe where a storage
// load is a per-lane loop. One float per texel because a row of an odd vocabulary (GPT-2's
// 50257) starts off any vec4 boundary. The same operations in the same order: the same bits.
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform textureBuffer logits_texels;
#define LOGIT(k) texelFetch(logits_texels, int(k)).x
layout(std430, binding = 1) readonly buffer Targets { uint targets[]; };
layout(std430, binding = 2) writeonly buffer Losses { float losses[]; };
layout(push_constant) uniform Push { CrossEntropyParams p; };

#include "cross_entropy_forward_body.glsl"
