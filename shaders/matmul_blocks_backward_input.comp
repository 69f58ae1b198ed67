#version 450
#extension GL_GOOGLE_include_directive : require

// matmul_blocks_backward_input_body.glsl reading dout from a storage buffer (GPUs).
#include "matmul_blocks_backward_input_body.glsl"
