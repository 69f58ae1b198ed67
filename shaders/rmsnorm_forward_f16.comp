#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_F16
#include "act16.glsl"
#include "rmsnorm_params.h"

// rmsnorm_forward_body.glsl with f16 x and y (storage buffers); w and rstd fp32.
layout(std430, binding = 0) readonly buffer X { ACT_T x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
#define X(i) LOAD_ACT(x[i])
#define W(i) w[i]
#include "rmsnorm_forward_body.glsl"
