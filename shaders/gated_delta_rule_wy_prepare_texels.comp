#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_samplerless_texture_functions : require

// The chunkwise gated delta rule's first pass, reading k_j through an RGBA32F texel view: on
// llvmpipe a texel fetch is a branch-free gather while a storage-buffer load loops over the SIMD
// lanes (DeviceQuirks::texel_fetch_beats_storage_loads). The same bits.
#define TEXELS
#include "gated_delta_rule_wy_prepare_body.glsl"
