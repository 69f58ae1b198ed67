// Push constants of the roofline kernels (peak_fma.comp, peak_copy.comp), shared by GLSL and C++
// like push_constants.h. They measure what a device can do at best, for `remat bench --kernels`.
#ifndef REMAT_ROOFLINE_PARAMS_H
#define REMAT_ROOFLINE_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// peak_fma: invocation i < count runs 8 independent chains x = fma(x, a, b), chain k starting at
// float(i + k), for iterations x 16 steps each, and stores the sum of the 8 chains to out[i].
// Every step is one FMA (2 FLOPs); memory traffic is the final store only.
struct PeakFmaParams {
  uint count;
  uint iterations;
  float a;
  float b;
};
REMAT_PUSH_WORDS(PeakFmaParams, 4)

// peak_copy: dst[i] = src[i] for i < count vec4 elements (16 bytes each), grid-stride.
struct PeakCopyParams {
  uint count;
};
REMAT_PUSH_WORDS(PeakCopyParams, 1)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_ROOFLINE_PARAMS_H
