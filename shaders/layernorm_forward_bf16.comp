#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_BF16
#include "act16.glsl"
#include "layernorm_params.h"

// layernorm_forward_body.glsl with bf16 x and y (storage buffers); w, bias, mean, rstd fp32.
layout(std430, binding = 0) readonly buffer X { ACT_T x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
#define X(i) LOAD_ACT(x[i])
#define W(i) w[i]
#define BIAS(i) bias[i]
#include "layernorm_forward_body.glsl"
