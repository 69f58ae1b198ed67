// A VkPipelineCache persisted on disk, one file per device, so the second run of remat skips the
// driver's shader compilation. A file is handed to Vulkan only when its own header (remat version,
// device UUID, driver version) and Vulkan's header (VkPipelineCacheHeaderVersionOne: vendor,
// device id, pipelineCacheUUID) match this device; anything else (corrupt, truncated, another
// device's or another version's) is ignored with one warning line on stderr.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "runtime/vulkan/device.h"

namespace remat {

// What a cache file must have been written for.
struct PipelineCacheKey {
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  std::array<uint8_t, VK_UUID_SIZE> device_uuid{};  // VkPhysicalDeviceIDProperties::deviceUUID
  std::array<uint8_t, VK_UUID_SIZE> cache_uuid{};   // VkPhysicalDeviceProperties::pipelineCacheUUID
  std::string remat_version;                        // the build's project version
};

PipelineCacheKey pipeline_cache_key(const Device& device);

// The default folder: $REMAT_CACHE_DIR, else $XDG_CACHE_HOME/remat, else $HOME/.cache/remat
// (variables that are unset or empty are skipped); nullopt when none of them is set.
std::optional<std::filesystem::path> default_pipeline_cache_dir();

// The device UUID as 32 lowercase hex digits (names the device's files in the cache folder).
std::string device_uuid_hex(const PipelineCacheKey& key);

// The device's file in `dir`: "pipelines-<device UUID in hex>.bin".
std::filesystem::path pipeline_cache_file(const std::filesystem::path& dir,
                                          const PipelineCacheKey& key);

// File contents: remat's header for `key`, then Vulkan's cache data.
std::vector<std::byte> encode_pipeline_cache(const PipelineCacheKey& key,
                                             std::span<const std::byte> vulkan_data);
// The Vulkan data inside `file` when it was written for `key` and Vulkan's own header matches;
// otherwise nullopt and `why` says what is wrong in a few words.
std::optional<std::span<const std::byte>> decode_pipeline_cache(std::span<const std::byte> file,
                                                                const PipelineCacheKey& key,
                                                                std::string& why);

class PipelineCache {
 public:
  // Loads `file` when it exists and is valid (a warning when it is not); without a file the cache
  // lives in memory only.
  PipelineCache(Device& device, std::optional<std::filesystem::path> file);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  VkPipelineCache handle() const { return cache_; }
  const std::optional<std::filesystem::path>& file() const { return file_; }
  uint64_t loaded_bytes() const { return loaded_bytes_; }  // Vulkan data taken from the file
  // Writes the file atomically when the cache holds data it did not load (new pipelines). A
  // failure is a warning, never an error: the cache only saves time. True when written.
  bool save();

 private:
  Device& device_;
  std::optional<std::filesystem::path> file_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  PipelineCacheKey key_;
  std::vector<std::byte> loaded_;  // the Vulkan data handed over at creation
  uint64_t loaded_bytes_ = 0;
};

}  // namespace remat
