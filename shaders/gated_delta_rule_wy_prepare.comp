#version 450
#extension GL_GOOGLE_include_directive : require

// The chunkwise gated delta rule's first pass, reading k_j through a storage buffer.
#include "gated_delta_rule_wy_prepare_body.glsl"
