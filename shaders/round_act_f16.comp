#version 450
#extension GL_GOOGLE_include_directive : require
#define ACT_F16
// round_act_body.glsl to f16.
#include "round_act_body.glsl"
