#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "attention_params.h"

// attention_forward_body.glsl, reading q, k and v through storage buffers.
layout(std430, binding = 0) readonly buffer Q { vec4 q[]; };
layout(std430, binding = 1) readonly buffer K { vec4 k[]; };
layout(std430, binding = 2) readonly buffer V { vec4 v[]; };
#define Q(i) q[i]
#define K(i) k[i]
#define V(i) v[i]
#include "attention_forward_body.glsl"
