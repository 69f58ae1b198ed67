#version 450
#extension GL_GOOGLE_include_directive : require

// embedding_forward_body.glsl reading bf16 tables (a frozen base stored in 16 bits) and
// storing x (an activation) as f16.
#define B_BF16
#define C_F16
#include "embedding_forward_body.glsl"
