#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "attention_params.h"

// attention_forward_body.glsl, reading qkv through a storage buffer.
layout(std430, binding = 0) readonly buffer Qkv { vec4 qkv[]; };
#define QKV(i) qkv[i]
#include "attention_forward_body.glsl"
