#version 450
#extension GL_GOOGLE_include_directive : require
// cross_entropy_forward_storage.glsl with fp32 logits.
#include "cross_entropy_forward_storage.glsl"
