#version 450
#extension GL_GOOGLE_include_directive : require

// embedding_forward_body.glsl storing x (an activation) as f16.
#define C_F16
#include "embedding_forward_body.glsl"
