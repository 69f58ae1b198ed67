// Register tiles of the texel matmuls chosen on this device at their first use. Each shape class
// a plan uses (runtime/vulkan/matmul_tiles.h) is timed with every candidate tile on a probe of its
// kernel and fetch mode, at most 512 in each extent, and the fastest is kept in the tile file
// (runtime/matmul_tile_file.h) for every later session on this device and driver. A tile never
// changes a result bit. REMAT_MATMUL_TUNING=off (or SessionConfig::measure_matmul_tiles = false)
// keeps the tiles from device facts alone, the same on every run, for reproducible timings.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>

#include "runtime/kernels/matmul_texels.h"
#include "runtime/vulkan/executor.h"
#include "runtime/vulkan/matmul_tiles.h"

namespace remat {

struct MatmulTuningReport {
  std::size_t classes = 0;    // texel matmul shape classes the dispatches use
  std::size_t from_file = 0;  // of them, chosen by an earlier measurement
  std::size_t measured = 0;   // of them, measured now
  double measure_ms = 0;      // wall time of the measurements, pipeline builds included
};

// False when REMAT_MATMUL_TUNING is "off" or "0"; true when it is unset, empty, "on" or "1";
// std::invalid_argument for anything else.
bool matmul_tuning_enabled_by_env();

// Sets tiling.chosen for every texel matmul class `dispatches` use that it has no tile for: from
// `file` where an earlier measurement on this device chose one, else by measuring now (then the
// file is rewritten with the new choices). Nothing is measured on a device without timestamps.
MatmulTuningReport tune_matmul_tiles(KernelCache& kernels, std::span<const Dispatch> dispatches,
                                     const std::optional<std::filesystem::path>& file,
                                     MatmulTiling& tiling);

// The fastest tile for `use`'s class, timed on its probe (the fastest of five interleaved runs
// per candidate): `preferred` (the device's default) unless another candidate is at least 5%
// faster, so that noise does not flip the choice. Candidates share X's fetches across
// `shared_x_lanes` lanes where they allow it, as the step's dispatches will.
MatmulTile measure_matmul_tile(KernelCache& kernels, const kernels::TexelMatmulUse& use,
                               const MatmulTile& preferred, uint32_t shared_x_lanes);

}  // namespace remat
