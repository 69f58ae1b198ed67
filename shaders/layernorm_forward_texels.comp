#version 450
#extension GL_GOOGLE_include_directive : require
#include "layernorm_params.h"

// layernorm_forward_body.glsl, reading through R32F texel views.
// On llvmpipe a texel fetch is a branch-free gather while a storage-buffer load loops over the
// SIMD lanes (DeviceQuirks::texel_fetch_beats_storage_loads).
layout(binding = 0) uniform textureBuffer x_texels;
layout(binding = 1) uniform textureBuffer w_texels;
layout(binding = 2) uniform textureBuffer bias_texels;
#define X(i) texelFetch(x_texels, int(i)).x
#define W(i) texelFetch(w_texels, int(i)).x
#define BIAS(i) texelFetch(bias_texels, int(i)).x
#include "layernorm_forward_body.glsl"
