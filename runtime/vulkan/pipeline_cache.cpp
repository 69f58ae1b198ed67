#include "runtime/vulkan/pipeline_cache.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/atomic_file.h"
#include "base/regular_file.h"
#include "base/whole_file.h"
#include "runtime/vulkan/error.h"

#ifndef REMAT_VERSION
#error "REMAT_VERSION must be defined by the build (the project version)"
#endif

namespace remat {

namespace {

constexpr char kMagic[8] = {'R', 'E', 'M', 'A', 'T', 'P', 'C', '1'};
constexpr std::size_t kMaxVersionBytes = 256;

void warn(const std::string& what) {
  std::fprintf(stderr, "remat: warning: %s\n", what.c_str());
}

// Writes fields into a buffer sized in advance.
struct Filler {
  std::byte* at;
  void bytes(const void* data, std::size_t n) {
    if (n) std::memcpy(at, data, n);
    at += n;
  }
  void u32(uint32_t v) {
    const uint8_t b[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
    bytes(b, 4);
  }
};

// Reads little-endian fields off the front of a span; false once it runs short.
struct Cursor {
  std::span<const std::byte> rest;
  bool take(void* out, std::size_t n) {
    if (rest.size() < n) return false;
    if (n) std::memcpy(out, rest.data(), n);
    rest = rest.subspan(n);
    return true;
  }
  bool u32(uint32_t& v) {
    uint8_t b[4];
    if (!take(b, 4)) return false;
    v = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
    return true;
  }
};

// Vulkan's own header (VkPipelineCacheHeaderVersionOne, little-endian on every remat target).
bool vulkan_header_matches(std::span<const std::byte> data, const PipelineCacheKey& key,
                           std::string& why) {
  Cursor c{data};
  uint32_t size = 0, version = 0, vendor = 0, device = 0;
  std::array<uint8_t, VK_UUID_SIZE> uuid{};
  if (!c.u32(size) || !c.u32(version) || !c.u32(vendor) || !c.u32(device) ||
      !c.take(uuid.data(), uuid.size())) {
    why = "Vulkan cache header is truncated";
    return false;
  }
  if (version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || size < 32 || size > data.size())
    why = "Vulkan cache header is malformed";
  else if (vendor != key.vendor_id || device != key.device_id || uuid != key.cache_uuid)
    why = "Vulkan cache data is for another device or driver";
  else
    return true;
  return false;
}

std::string hex(std::span<const uint8_t> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 0xF];
  }
  return s;
}

// The cache file's bytes; nothing when there is none yet. One that is no regular file (a device,
// a FIFO) is warned of and ignored: reading it could block or never end.
std::optional<std::vector<std::byte>> read_file(const std::filesystem::path& path) {
  std::string bytes;
  try {
    bytes = read_whole_file(path);
  } catch (const NotRegularFile& e) {
    warn(std::string(e.what()) + "; ignoring it and compiling kernels afresh");
    return std::nullopt;
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // not written yet, or unreadable: compiled afresh either way
  }
  std::vector<std::byte> out(bytes.size());
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace

PipelineCacheKey pipeline_cache_key(const Device& device) {
  VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &ids;
  device.instance().vk().vkGetPhysicalDeviceProperties2(device.physical(), &props);
  PipelineCacheKey k;
  k.vendor_id = props.properties.vendorID;
  k.device_id = props.properties.deviceID;
  k.driver_version = props.properties.driverVersion;
  std::memcpy(k.device_uuid.data(), ids.deviceUUID, VK_UUID_SIZE);
  std::memcpy(k.cache_uuid.data(), props.properties.pipelineCacheUUID, VK_UUID_SIZE);
  k.remat_version = REMAT_VERSION;
  return k;
}

std::optional<std::filesystem::path> default_pipeline_cache_dir() {
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  if (const char* v = env("REMAT_CACHE_DIR")) return std::filesystem::path(v);
  if (const char* v = env("XDG_CACHE_HOME")) return std::filesystem::path(v) / "remat";
  if (const char* v = env("HOME")) return std::filesystem::path(v) / ".cache" / "remat";
  return std::nullopt;
}

std::string device_uuid_hex(const PipelineCacheKey& key) {
  return hex(key.device_uuid);
}

std::filesystem::path pipeline_cache_file(const std::filesystem::path& dir,
                                          const PipelineCacheKey& key) {
  return dir / ("pipelines-" + device_uuid_hex(key) + ".bin");
}

std::vector<std::byte> encode_pipeline_cache(const PipelineCacheKey& key,
                                             std::span<const std::byte> vulkan_data) {
  std::vector<std::byte> out(sizeof kMagic + VK_UUID_SIZE + 12 + key.remat_version.size() +
                             vulkan_data.size());
  Filler f{out.data()};
  f.bytes(kMagic, sizeof kMagic);
  f.bytes(key.device_uuid.data(), key.device_uuid.size());
  f.u32(key.driver_version);
  f.u32(static_cast<uint32_t>(key.remat_version.size()));
  f.bytes(key.remat_version.data(), key.remat_version.size());
  f.u32(static_cast<uint32_t>(vulkan_data.size()));
  f.bytes(vulkan_data.data(), vulkan_data.size());
  return out;
}

std::optional<std::span<const std::byte>> decode_pipeline_cache(std::span<const std::byte> file,
                                                                const PipelineCacheKey& key,
                                                                std::string& why) {
  Cursor c{file};
  char magic[sizeof kMagic];
  std::array<uint8_t, VK_UUID_SIZE> uuid{};
  uint32_t driver = 0, version_len = 0, data_len = 0;
  if (!c.take(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof kMagic) != 0) {
    why = "not a remat pipeline cache";
    return std::nullopt;
  }
  std::string version;
  if (!c.take(uuid.data(), uuid.size()) || !c.u32(driver) || !c.u32(version_len) ||
      version_len > kMaxVersionBytes) {
    why = "header is truncated or malformed";
    return std::nullopt;
  }
  version.resize(version_len);
  if (!c.take(version.data(), version_len) || !c.u32(data_len) || c.rest.size() != data_len) {
    why = "file is truncated or has trailing bytes";
    return std::nullopt;
  }
  if (uuid != key.device_uuid || driver != key.driver_version) {
    why = "written for another device or driver version";
    return std::nullopt;
  }
  if (version != key.remat_version) {
    why = "written by remat " + version + ", this is " + key.remat_version;
    return std::nullopt;
  }
  if (!vulkan_header_matches(c.rest, key, why)) return std::nullopt;
  return c.rest;
}

PipelineCache::PipelineCache(Device& device, std::optional<std::filesystem::path> file)
    : device_(device), file_(std::move(file)), key_(pipeline_cache_key(device)) {
  if (file_) {
    if (auto bytes = read_file(*file_)) {
      std::string why;
      if (auto data = decode_pipeline_cache(*bytes, key_, why))
        loaded_.assign(data->begin(), data->end());
      else
        warn(file_->string() + ": " + why + "; ignoring it and compiling kernels afresh");
    }
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = loaded_.size();
  ci.pInitialData = loaded_.empty() ? nullptr : loaded_.data();
  vk_check(device_.vk().vkCreatePipelineCache(device_.handle(), &ci, nullptr, &cache_),
           "vkCreatePipelineCache");
  loaded_bytes_ = loaded_.size();
}

PipelineCache::~PipelineCache() {
  if (cache_) device_.vk().vkDestroyPipelineCache(device_.handle(), cache_, nullptr);
}

bool PipelineCache::save() {
  if (!file_) return false;
  try {
    std::size_t size = 0;
    vk_check(device_.vk().vkGetPipelineCacheData(device_.handle(), cache_, &size, nullptr),
             "vkGetPipelineCacheData");
    std::vector<std::byte> data(size);
    vk_check(device_.vk().vkGetPipelineCacheData(device_.handle(), cache_, &size, data.data()),
             "vkGetPipelineCacheData");
    data.resize(size);
    if (data == loaded_) return false;
    std::filesystem::create_directories(file_->parent_path());
    const auto bytes = encode_pipeline_cache(key_, data);
    write_file_atomically(*file_, {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
    loaded_ = std::move(data);
    return true;
  } catch (const std::exception& e) {
    warn(file_->string() + ": cannot save the pipeline cache (" + e.what() + ")");
    return false;
  }
}

}  // namespace remat
