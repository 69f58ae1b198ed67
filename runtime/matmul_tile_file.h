// The matmul tiles measured on one device, kept in a JSON file next to the pipeline cache
// ("matmul-tiles-<device UUID>.json" in the pipeline cache's folder) so that each shape class is
// measured once per device, driver and kernel build. A file written for another device, driver,
// remat version or other kernel code is ignored with a warning and rewritten.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/vulkan/matmul_tiles.h"
#include "runtime/vulkan/pipeline_cache.h"

namespace remat {

// What a tile file must have been measured with.
struct MatmulTileFileKey {
  PipelineCacheKey device;  // device UUID, driver version, remat version
  uint64_t kernels = 0;     // content hash of the two texel matmul kernels' SPIR-V
};

// The key for `device` and the kernels embedded in this build.
MatmulTileFileKey matmul_tile_file_key(const Device& device);

std::filesystem::path matmul_tile_file(const std::filesystem::path& dir,
                                       const MatmulTileFileKey& key);

using MatmulTileTable = std::map<MatmulClass, MatmulTile>;

std::string encode_matmul_tiles(const MatmulTileFileKey& key, const MatmulTileTable& tiles);
// The tiles in `text` when it was written for `key` and every entry is a class and a tile its
// kernel can run; otherwise nullopt and `why` says what is wrong in a few words.
std::optional<MatmulTileTable> decode_matmul_tiles(std::string_view text,
                                                   const MatmulTileFileKey& key, std::string& why);

// The file's tiles, or an empty table (with one warning line on stderr when the file exists but
// cannot be used).
MatmulTileTable load_matmul_tiles(const std::filesystem::path& file, const MatmulTileFileKey& key);
// Writes `tiles` atomically; a failure is a warning, never an error (the file only saves time).
bool save_matmul_tiles(const std::filesystem::path& file, const MatmulTileFileKey& key,
                       const MatmulTileTable& tiles);

}  // namespace remat
