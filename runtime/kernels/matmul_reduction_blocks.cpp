#include "runtime/kernels/matmul_reduction_blocks.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "matmul_texels_params.h"
#include "runtime/kernels/kernel_variants.h"
#include "runtime/vulkan/matmul_tiles.h"

namespace remat::kernels {

namespace {

constexpr uint32_t kContinue = 2;  // MatmulTexelsParams.accumulate: the sum starts from C

// Y's bytes per block: about one core's L2 on the CPUs llvmpipe runs on. On a 2-core EPYC
// (1 MiB L2 per core, 32 MiB L3) the head's dinp took 1.7x its forward's time with 1 MiB
// blocks, against 2.2x unsplit, 2.0x with 4 MiB and 2.1x with 256 KiB blocks.
constexpr uint64_t kBlockCacheBytes = uint64_t{1} << 20;

push::MatmulTexelsParams params_of(const Dispatch& d) {
  push::MatmulTexelsParams p{};
  std::memcpy(&p, d.push.data(), sizeof p);
  return p;
}

bool splittable(const DeviceQuirks& quirks, const Dispatch& d) {
  if (!quirks.texel_fetch_beats_storage_loads || d.kernel != KernelId::matmul_outer_texels ||
      d.push.size() != sizeof(push::MatmulTexelsParams) || d.spec.size() < 6 ||
      d.bindings.size() < 2)
    return false;
  const uint32_t mode = d.spec[5];
  const uint32_t accumulate = params_of(d).accumulate;
  return (mode == 0 || mode == 3) && (accumulate == 0 || accumulate == kContinue);
}

// Bytes between Y's rows: y_stride elements of the view's element size.
uint64_t y_row_bytes(const Dispatch& d) {
  return uint64_t{params_of(d).y_stride} * (texel_format_bytes(d.bindings[1].texel_format) / 4);
}

}  // namespace

uint32_t reduction_block_rows(const Dispatch& d, uint64_t cache_bytes) {
  const uint64_t row = y_row_bytes(d);
  const uint64_t rows = row == 0 ? 4 : cache_bytes / row / 4 * 4;
  return static_cast<uint32_t>(std::clamp<uint64_t>(rows, 4, uint64_t{1} << 30));
}

std::vector<Dispatch> split_long_reduction(const DeviceQuirks& quirks, const Dispatch& d) {
  if (!splittable(quirks, d)) return {d};
  return split_reduction(quirks, d, reduction_block_rows(d, kBlockCacheBytes));
}

std::vector<Dispatch> split_reduction(const DeviceQuirks& quirks, const Dispatch& d,
                                      uint32_t block) {
  if (block == 0 || block % 4 != 0)
    throw std::invalid_argument("split_reduction: a block of " + std::to_string(block) +
                                " rows is not a positive multiple of 4");
  if (!splittable(quirks, d)) return {d};
  const push::MatmulTexelsParams p = params_of(d);
  // Blocks pay off where several row bands re-read each one; a single band streams Y once.
  if (p.R <= 2 * block || d.groups[1] < 2) return {d};
  const uint64_t row_bytes = y_row_bytes(d);

  // The block's tile: the one this device chose for a reduction of the block's length.
  const MatmulClass cls = matmul_class(TexelMatmul::outer, d.spec[5], p.I, p.J, block);
  const MatmulTile t = quirks.matmul_tiling.tile(cls);
  const bool retile = matmul_tile_fits(TexelMatmul::outer, d.spec[5], t);

  std::vector<Dispatch> out;
  for (uint32_t r0 = 0; r0 < p.R; r0 += block) {
    Dispatch b = d;
    push::MatmulTexelsParams q = p;
    q.R = std::min(block, p.R - r0);
    q.x_offset = p.x_offset + r0 * p.x_sr;  // X_MODE 0 and 3 read X along r (x_sr = 1)
    if (r0 > 0) q.accumulate = kContinue;
    b.push = push_bytes(q);
    // Y's rows r0.. start the view: a multiple of 4 rows of a vec4-aligned stride keeps the
    // view's offset a whole number of 16-byte texels.
    const uint64_t skip = uint64_t{r0} * row_bytes;
    b.bindings[1].slice.offset += skip;
    b.bindings[1].slice.size -= skip;
    if (retile) {
      b.spec[0] = t.wx, b.spec[3] = t.rows, b.spec[4] = t.cols;
      b.groups = {div_up(p.J / 4, t.wx * t.cols), div_up(p.I, t.rows), 1};
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace remat::kernels
