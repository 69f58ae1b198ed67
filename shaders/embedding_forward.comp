#version 450
#extension GL_GOOGLE_include_directive : require

// embedding_forward_body.glsl with f32 tables and output.
#include "embedding_forward_body.glsl"
