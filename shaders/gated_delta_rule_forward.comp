#version 450
#extension GL_GOOGLE_include_directive : require

// The gated delta rule forward with every head loop unrolled: the state in registers (GPUs).
#include "gated_delta_rule_forward_body.glsl"
