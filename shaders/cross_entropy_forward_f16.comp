#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_F16
// cross_entropy_forward_storage.glsl with f16 logits.
#include "cross_entropy_forward_storage.glsl"
