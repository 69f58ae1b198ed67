#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "attention_params.h"

// Rows in registers, head loops unrolled (see attention_rows.glsl): these kernels run on CPU
// drivers, where workgroup memory costs a loop over the SIMD lanes per access.
#define ROWS_IN_REGISTERS

// attention_forward_body.glsl, reading q, k and v through texel views.
// On llvmpipe a texel fetch is a branch-free gather while a storage-buffer load loops over the
// SIMD lanes (DeviceQuirks::texel_fetch_beats_storage_loads).
layout(binding = 0) uniform textureBuffer q_texels;  // RGBA32F views
layout(binding = 1) uniform textureBuffer k_texels;
layout(binding = 2) uniform textureBuffer v_texels;
#define Q(i) texelFetch(q_texels, int(i))
#define K(i) texelFetch(k_texels, int(i))
#define V(i) texelFetch(v_texels, int(i))
#include "attention_forward_body.glsl"
