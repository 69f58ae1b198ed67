#version 450
#extension GL_GOOGLE_include_directive : require

// The chunkwise gated delta rule's serial forward, reading its scratch through storage buffers.
#include "gated_delta_rule_wy_forward_body.glsl"
