#version 450
#extension GL_GOOGLE_include_directive : require
#include "layernorm_params.h"

// layernorm_backward_body.glsl, reading through R32F texel views.
// On llvmpipe a texel fetch is a branch-free gather while a storage-buffer load loops over the
// SIMD lanes (DeviceQuirks::texel_fetch_beats_storage_loads).
layout(binding = 0) uniform textureBuffer dy_texels;
layout(binding = 1) uniform textureBuffer x_texels;
layout(binding = 2) uniform textureBuffer w_texels;
layout(binding = 3) uniform textureBuffer mean_texels;
layout(binding = 4) uniform textureBuffer rstd_texels;
#define DY(i) texelFetch(dy_texels, int(i)).x
#define X(i) texelFetch(x_texels, int(i)).x
#define W(i) texelFetch(w_texels, int(i)).x
#define MEAN(i) texelFetch(mean_texels, int(i)).x
#define RSTD(i) texelFetch(rstd_texels, int(i)).x
#include "layernorm_backward_body.glsl"
