#version 450
#extension GL_GOOGLE_include_directive : require

// The gated delta rule backward with every head loop unrolled: the state in registers (GPUs).
#include "gated_delta_rule_backward_body.glsl"
