#version 450
#extension GL_GOOGLE_include_directive : require
#include "rmsnorm_params.h"

// rmsnorm_forward_body.glsl, reading through R32F texel views.
// On llvmpipe a texel fetch is a branch-free gather while a storage-buffer load loops over the
// SIMD lanes (DeviceQuirks::texel_fetch_beats_storage_loads).
layout(binding = 0) uniform textureBuffer x_texels;
layout(binding = 1) uniform textureBuffer w_texels;
#define X(i) texelFetch(x_texels, int(i)).x
#define W(i) texelFetch(w_texels, int(i)).x
#include "rmsnorm_forward_body.glsl"
