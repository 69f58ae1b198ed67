#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define ACT_BF16
#include "act16.glsl"
#include "attention_params.h"

// attention_forward_body.glsl with bf16 q, k, v and out (storage buffers); lse fp32.
layout(std430, binding = 0) readonly buffer Q { ACT4_T q[]; };
layout(std430, binding = 1) readonly buffer K { ACT4_T k[]; };
layout(std430, binding = 2) readonly buffer V { ACT4_T v[]; };
#define Q(i) LOAD_ACT4(q[i])
#define K(i) LOAD_ACT4(k[i])
#define V(i) LOAD_ACT4(v[i])
#include "attention_forward_body.glsl"
