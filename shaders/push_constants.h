// Push-constant blocks shared by the GLSL kernels and the C++ host code.
//
// This one file is compiled both as GLSL (included by shaders/*.comp) and as C++ (included by
// runtime/ and tests/), so the two sides cannot drift: every member is a 32-bit scalar, which
// has the same offset under C++ and the std430 rules of Vulkan push constants, and the C++ side
// static_asserts each struct's size against its member count.
#ifndef REMAT_PUSH_CONSTANTS_H
#define REMAT_PUSH_CONSTANTS_H

#ifdef __cplusplus
#include <cstdint>
namespace remat::push {
using uint = std::uint32_t;
#define REMAT_PUSH_WORDS(Name, words)                                          \
  static_assert(sizeof(Name) == 4 * (words), #Name " must be 32-bit scalars"); \
  static_assert(sizeof(Name) <= 128, #Name " exceeds the 128-byte push-constant minimum");
#else
#define REMAT_PUSH_WORDS(Name, words)
#endif

// fill.comp: dst[i] = value for i < count.
struct FillParams {
  uint count;
  float value;
};
REMAT_PUSH_WORDS(FillParams, 2)

// copy.comp: dst[dst_offset + i] = src[src_offset + i] for i < count (offsets in floats).
struct CopyParams {
  uint count;
  uint src_offset;
  uint dst_offset;
};
REMAT_PUSH_WORDS(CopyParams, 3)

// matmul_forward.comp: out[M,N] = inp[M,K] * W + bias[N].
// w_layout 0: W stored [K,N] (in, out; Hugging Face Conv1D). 1: W stored [N,K] (out, in;
// nn.Linear and the tied token embedding used as the LM head).
// out is columns [n_offset, n_offset + N) of a row-major matrix with rows ldo floats apart, and
// bias is read at n_offset + n: a weight too large for one binding (GPT-2's tied head) is bound
// in pieces of its rows, each dispatch writing its own columns of the whole output. A whole
// matmul has ldo = N, n_offset = 0.
struct MatmulParams {
  uint M;
  uint N;
  uint K;
  uint w_layout;
  uint has_bias;
  uint ldo;
  uint n_offset;
};
REMAT_PUSH_WORDS(MatmulParams, 7)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_PUSH_CONSTANTS_H
