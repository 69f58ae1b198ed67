// X texels shared across a subgroup, for the texel matmuls on CPU drivers (included after the
// kernel's TI, MAX_T and X_LANES). llvmpipe runs a subgroup's lanes in one SIMD register, and a
// texel fetch is a gather even when every lane reads the same texel, as every lane of a
// workgroup does for X's rows. With X_LANES > 1 (the subgroup size, set by the host where it
// divides TI and the workgroup), each lane fetches TI / X_LANES of the texels and
// subgroupShuffle hands each lane the one it needs: the same values in the same fma chains, so
// the bits do not change. X_LANES = 1: every invocation fetches its own. The host sets X_LANES > 1
// only where the device runs compute subgroups of exactly that size with shuffles. (Spec-constant
// selects and expressions of the workgroup size fail to build on Mesa 22.3's lavapipe, hence 1
// rather than 0 for "off" and the host's checks.)
#ifndef REMAT_SHARED_X_GLSL
#define REMAT_SHARED_X_GLSL

const bool SHARED_X = X_LANES > 1;
const uint MAX_SHARED = MAX_T;  // texels per lane: TI / X_LANES, or (TI + 4) / X_LANES rounded up

// Texel t of those the subgroup fetched, t = k * X_LANES + lane: lane t % X_LANES's fetched[k].
#define SHARED_TEXEL(fetched, t) subgroupShuffle(fetched[(t) / X_LANES], (t) % X_LANES)

#endif  // REMAT_SHARED_X_GLSL
