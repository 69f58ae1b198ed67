#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_BF16
#include "rope_params.h"

// out = in rotated by +angle (rope_body.glsl), bf16 in and out. The backward's gradients are fp32.
#define ROPE_SIGN 1.0
#include "rope_body.glsl"
