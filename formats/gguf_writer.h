// Writing GGUF version 3 files (formats/gguf.h reads them): the header, metadata in the given
// order, tensor infos, padding to the data section, then each tensor's bytes at the next offset
// aligned to general.alignment (32 unless the metadata sets it), padded after it as ggml pads.
// The file is replaced atomically (base/atomic_file.h) and the data streams in piece by piece, so
// host memory stays bounded by the pieces, not by the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/gguf.h"

namespace remat {

class AtomicFile;

// A tensor as a writer is asked to store it.
struct GgufTensorSpec {
  std::string name;
  GgmlType type = GgmlType::f32;
  std::vector<uint64_t> ne;  // ggml order: ne[0] is the row length
};

// The bytes from the magic to the start of the data section of a file with `metadata` and
// `tensors` (their offsets following one another, aligned). std::invalid_argument "<origin>:
// ..." for what the reader would refuse: general.alignment not a uint32 power of two, a tensor
// name empty, of 64 bytes or more, or repeated, 0 or more than 4 dimensions, a dimension of 0,
// 2^63 elements or more, or rows that are not whole blocks of the type.
std::string gguf_header_bytes(const GgufMetadata& metadata,
                              const std::vector<GgufTensorSpec>& tensors,
                              const std::string& origin = "gguf");
// Bytes of a tensor's data, without padding.
uint64_t gguf_tensor_bytes(const GgufTensorSpec& t);

// Writes one file atomically: a crash or an error mid-write leaves any previous file at `path`
// intact. Tensor data arrives through write() in order, each tensor's bytes whole before the
// next's; commit() makes the file once every byte has come.
class GgufWriter {
 public:
  GgufWriter(const std::filesystem::path& path, const GgufMetadata& metadata,
             std::vector<GgufTensorSpec> tensors);
  ~GgufWriter();
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // Raw bytes as the file stores them: blocks of a quantized type, or little-endian values.
  void write(std::span<const std::byte> bytes);
  // Values for f32, f16 and bf16 tensors, converted to the tensor's type (round to nearest even).
  // std::logic_error for a tensor of another type or a piece that starts inside an element.
  void write(std::span<const float> values);
  void commit();  // std::logic_error unless every tensor was written whole
  uint64_t total_bytes() const { return total_bytes_; }
  uint64_t bytes_written() const { return written_; }

 private:
  void write_raw(const void* data, std::size_t bytes);
  void advance(uint64_t bytes);  // `bytes` of the current tensor were written

  std::filesystem::path path_;
  std::unique_ptr<AtomicFile> file_;
  std::vector<GgufTensorSpec> tensors_;
  std::vector<uint64_t> sizes_;  // gguf_tensor_bytes of each
  uint32_t alignment_ = 32;
  std::size_t tensor_ = 0;  // the tensor write() is filling
  uint64_t done_ = 0;       // its bytes written so far
  uint64_t total_bytes_ = 0;
  uint64_t written_ = 0;
};

}  // namespace remat
