#version 450
#extension GL_GOOGLE_include_directive : require
#include "layernorm_params.h"

// layernorm_forward_body.glsl, reading through storage buffers.
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
#define X(i) x[i]
#define W(i) w[i]
#define BIAS(i) bias[i]
#include "layernorm_forward_body.glsl"
