#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define ACT_F16
#include "act16.glsl"
#include "attention_params.h"

// attention_backward_body.glsl with f16 q, k, v and out (storage buffers); dout, lse and the
// gradients fp32.
layout(std430, binding = 0) readonly buffer Dout { vec4 dout[]; };
layout(std430, binding = 1) readonly buffer Q { ACT4_T q[]; };
layout(std430, binding = 2) readonly buffer K { ACT4_T k[]; };
layout(std430, binding = 3) readonly buffer V { ACT4_T v[]; };
layout(std430, binding = 4) readonly buffer Out { ACT4_T outp[]; };
layout(std430, binding = 5) readonly buffer Lse { float lse[]; };
#define DOUT(i) dout[i]
#define Q(i) LOAD_ACT4(q[i])
#define K(i) LOAD_ACT4(k[i])
#define V(i) LOAD_ACT4(v[i])
#define OUTP(i) LOAD_ACT4(outp[i])
#define LSE(i) lse[i]
#include "attention_backward_body.glsl"
