// A texel outer-product matmul with a long reduction (the tied LM head's input gradient: R is a
// piece of the vocabulary, 43690 rows of wte) run as consecutive dispatches over blocks of R.
//
// Why: one dispatch gives each workgroup a TI-row band of the output and the whole reduction, so
// every band streams all of Y (wte's 134 MB piece) from memory again, I/TI times. A block of R
// is a slice of Y small enough to stay in the CPU's cache while all the bands of one dispatch
// read it, so Y crosses the memory bus about once.
//
// Same bits: block b > 0 is a dispatch with accumulate = 2, whose chains start from the value the
// previous block stored, so each output is still the one fma chain over r in ascending order
// that the single dispatch computes (an f32 stored and reloaded is unchanged). A dispatch that
// adds its sum to C (accumulate = 1) cannot be split that way and is kept whole.
#pragma once

#include <vector>

#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// Reduction rows per block for dispatch `d`: a multiple of 4 rows of its Y, about `cache_bytes`
// of them (at least 4).
uint32_t reduction_block_rows(const Dispatch& d, uint64_t cache_bytes);

// `d` as consecutive dispatches over blocks of `block` reduction rows (a multiple of 4; the last
// block may be shorter) where it is an f32 matmul_outer_texels dispatch reading X along r
// (X_MODE 0 or 3) with accumulate 0 or 2, two or more row bands (workgroups along I) and a
// reduction longer than two blocks, on a device whose texel matmuls are the CPU ones
// (texel_fetch_beats_storage_loads); else {d}. Each block gets the tile quirks.matmul_tiling
// chose for its own shape class.
std::vector<Dispatch> split_reduction(const DeviceQuirks& quirks, const Dispatch& d,
                                      uint32_t block);

// split_reduction with blocks of about a CPU's per-core L2 cache of Y (what the head measured
// fastest on llvmpipe).
std::vector<Dispatch> split_long_reduction(const DeviceQuirks& quirks, const Dispatch& d);

}  // namespace remat::kernels
