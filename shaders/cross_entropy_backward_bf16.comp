#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_BF16
// cross_entropy_backward_storage.glsl with bf16 logits.
#include "cross_entropy_backward_storage.glsl"
