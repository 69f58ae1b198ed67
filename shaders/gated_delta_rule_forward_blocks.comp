#version 450
#extension GL_GOOGLE_include_directive : require

// The gated delta rule forward with its head loops in blocks of UNROLL unrolled elements: minutes
// less to compile on CPU drivers, and the same bits (gated_delta_rule_common.glsl).
#define HEAD_BLOCKS
#include "gated_delta_rule_forward_body.glsl"
