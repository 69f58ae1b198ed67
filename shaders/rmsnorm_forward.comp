#version 450
#extension GL_GOOGLE_include_directive : require
#include "rmsnorm_params.h"

// rmsnorm_forward_body.glsl, reading through storage buffers.
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
#define X(i) x[i]
#define W(i) w[i]
#include "rmsnorm_forward_body.glsl"
