#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_blocks_forward_body.glsl reading inp from a storage buffer (GPUs).
#include "matmul_blocks_forward_body.glsl"
