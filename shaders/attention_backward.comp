#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "attention_params.h"

// attention_backward_body.glsl, reading its inputs through storage buffers.
layout(std430, binding = 0) readonly buffer Dout { vec4 dout[]; };
layout(std430, binding = 1) readonly buffer Q { vec4 q[]; };
layout(std430, binding = 2) readonly buffer K { vec4 k[]; };
layout(std430, binding = 3) readonly buffer V { vec4 v[]; };
layout(std430, binding = 4) readonly buffer Out { vec4 outp[]; };
layout(std430, binding = 5) readonly buffer Lse { float lse[]; };
#define DOUT(i) dout[i]
#define Q(i) q[i]
#define K(i) k[i]
#define V(i) v[i]
#define OUTP(i) outp[i]
#define LSE(i) lse[i]
#include "attention_backward_body.glsl"
