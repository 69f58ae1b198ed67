// safetensors files (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range, then the raw data.
// remat reads F32, F16 and BF16 (converted to float) and writes F32, atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace remat {

struct NamedTensor {
  std::string name;            // e.g. "h.0.attn.c_attn.weight"
  std::vector<int64_t> shape;  // row-major
  std::vector<float> values;   // product(shape) floats
  std::string source_dtype = "F32";  // dtype in the file it was read from
};

struct SafetensorsContents {
  std::vector<NamedTensor> tensors;                // in file order (by data offset)
  std::map<std::string, std::string> metadata;     // "__metadata__" string pairs
  const NamedTensor* find(const std::string& name) const;
};

// Header limits: a header longer than this is refused before it is read (hostile files).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// Throws std::invalid_argument "<path>: <what is wrong>" for unreadable or malformed files:
// header length beyond the file or above 100 MB, invalid JSON, unknown dtype, shape × dtype ≠
// byte length, offsets out of range, overlapping or not covering the data, non-finite values.
SafetensorsContents read_safetensors(const std::filesystem::path& path);
SafetensorsContents parse_safetensors(const std::string& bytes, const std::string& origin);

// Writes F32 tensors in the given order: to "<path>.tmp-<pid>", fsync, rename over `path`, fsync
// the directory. A crash mid-write leaves any previous file at `path` intact; the temporary file
// of a process that is no longer running is removed by the next save to the same `path`.
// Test hook: with REMAT_TEST_CRASH_IN_SAVE=1 in the environment the process exits (status 99)
// after writing half of the temporary file, so tests can check that nothing is lost.
void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
std::string serialize_safetensors(const std::vector<NamedTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata);

}  // namespace remat
