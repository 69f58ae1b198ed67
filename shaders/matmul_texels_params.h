// Push-constant block of the texel-fetch matmul kernels (shared by GLSL and C++, see
// push_constants.h for why every member is a 32-bit scalar).
#ifndef REMAT_MATMUL_TEXELS_PARAMS_H
#define REMAT_MATMUL_TEXELS_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Both kernels compute C[I,J] (+)= X * Y (+ bias[J]) with a sequential reduction over r < R, and
// read X and Y through texel views (element offsets below are in floats, from the view's start).
//   matmul_outer_texels.comp: C(i,j) = sum_r X(i,r) * Y[r*y_stride + j]      (Y vec4 along j)
//   matmul_dot_texels.comp:   C(i,j) = sum_r X(i,r) * Y[j*y_stride + r]      (both vec4 along r)
// X(i,r) = X[x_offset + i*x_si + r*x_sr]; the outer kernel's X_MODE says which stride is 1.
// C(i,j) is C[c_offset + i*ldc + j] (a piece's columns of a wider matrix have c_offset > 0).
// accumulate 0: C = sum; 1: C = C + sum; 2: the sum starts from C (continues a reduction that an
// earlier dispatch began, for a weight bound in pieces). has_bias 1 adds bias[j] (forward only).
// has_bias 2 (3) in the outer kernel: one more row of workgroups writes (adds) bias[j] =
// sum_r Y[r, j], the bias gradient of a weight gradient whose Y is dout (in_out layout).
// residual 1 (outer kernel, f32 C, accumulate 0): C = residual + (sum + bias), the residual read
// through binding 4's RGBA32F view in C's own layout (a matmul with a fused residual, docs/ops.md).
struct MatmulTexelsParams {
  uint I;
  uint J;
  uint R;
  uint x_offset;
  uint x_si;
  uint x_sr;
  uint y_stride;
  uint c_offset;
  uint ldc;
  uint accumulate;
  uint has_bias;
  uint residual;
};
REMAT_PUSH_WORDS(MatmulTexelsParams, 12)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_MATMUL_TEXELS_PARAMS_H
