#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_BF16
// round_act_body.glsl to bf16.
#include "round_act_body.glsl"
