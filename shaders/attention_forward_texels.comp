#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "attention_params.h"

// attention_forward_body.glsl, reading qkv through a texel view.
// On llvmpipe a texel fetch is a branch-free gather while a storage-buffer load loops over the
// SIMD lanes (DeviceQuirks::texel_fetch_beats_storage_loads).
layout(binding = 0) uniform samplerBuffer qkv_texels;  // RGBA32F view
#define QKV(i) texelFetch(qkv_texels, int(i))
#include "attention_forward_body.glsl"
