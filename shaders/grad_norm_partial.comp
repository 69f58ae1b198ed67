#version 450
#extension GL_GOOGLE_include_directive : require
#include "optimizer_params.h"

// The gradient norm's partial sums over a storage buffer; the loop is grad_norm_partial.glsl.
layout(std430, binding = 0) readonly buffer Grad { float grad[]; };
#define GN_WIDTH 1
#define GN_T float
float grad_at(uint j) { return grad[j]; }
void store_partials(uint i, float sum);

#include "grad_norm_partial.glsl"

void store_partials(uint i, float sum) { partials[i] = sum; }
