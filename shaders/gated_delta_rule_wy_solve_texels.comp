#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_samplerless_texture_functions : require

// The chunkwise gated delta rule's forward substitution, reading its scratch through RGBA32F texel views: on
// llvmpipe a texel fetch is a branch-free gather while a storage-buffer load loops over the SIMD
// lanes (DeviceQuirks::texel_fetch_beats_storage_loads). The same bits.
#define TEXELS
#include "gated_delta_rule_wy_solve_body.glsl"
