#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_F16
#include "act16.glsl"
#include "rmsnorm_params.h"

// rmsnorm_backward_body.glsl with f16 x (storage buffers); dy, w, rstd, gradients fp32.
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { ACT_T x[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer Rstd { float rstd[]; };
#define DY(i) dy[i]
#define X(i) LOAD_ACT(x[i])
#define W(i) w[i]
#define RSTD(i) rstd[i]
#include "rmsnorm_backward_body.glsl"
