// safetensors files (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range, then the raw data.
// remat reads F32, F16 and BF16 (converted to float) and writes F32, atomically. Both directions
// stream: a file is read tensor piece by tensor piece (never whole), and a save writes pieces as
// they come, so host memory stays bounded by the pieces, not by the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace remat {

class AtomicFile;

// A tensor's name and shape, as a file lists it or a writer is asked to.
struct TensorSpec {
  std::string name;            // e.g. "h.0.attn.c_attn.weight"
  std::vector<int64_t> shape;  // row-major
  std::string dtype = "F32";   // how SafetensorsWriter stores it: F32, F16 or BF16
};

struct NamedTensor {
  std::string name;                  // e.g. "h.0.attn.c_attn.weight"
  std::vector<int64_t> shape;        // row-major
  std::vector<float> values;         // product(shape) floats
  std::string source_dtype = "F32";  // dtype in the file it was read from
};

struct SafetensorsContents {
  std::vector<NamedTensor> tensors;             // in file order (by data offset)
  std::map<std::string, std::string> metadata;  // "__metadata__" string pairs
  const NamedTensor* find(const std::string& name) const;
};

// One tensor of a validated header: where its bytes are and how to read them.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;            // "F32", "F16" or "BF16"
  std::vector<int64_t> shape;   // row-major; elements × dtype size == end - begin
  uint64_t begin = 0, end = 0;  // byte range inside the data section
  uint64_t elements() const;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;        // by data offset; they tile the data section
  std::map<std::string, std::string> metadata;  // "__metadata__" string pairs
  uint64_t data_offset = 0;                     // file offset of the data section
  const SafetensorsEntry* find(const std::string& name) const;
};

// Header limits: a header longer than this is refused before it is read (hostile files).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// A safetensors file or buffer whose header has been read and validated: header length within
// the file and under 100 MB, valid JSON, known dtypes, shape × dtype = byte length, offsets in
// range and tiling the data section without overlap. Errors are std::invalid_argument
// "<origin>: <what is wrong>". Tensor values are decoded on demand by read().
class SafetensorsSource {
 public:
  // Reads only the header of `path`; the data is read by later read() calls (pread).
  static SafetensorsSource open(const std::filesystem::path& path);
  // Bytes the caller owns and keeps alive while the source is used; nothing is copied.
  static SafetensorsSource view(std::span<const std::byte> bytes, std::string origin);
  ~SafetensorsSource();
  SafetensorsSource(SafetensorsSource&&) noexcept;
  SafetensorsSource& operator=(SafetensorsSource&&) noexcept;

  const SafetensorsHeader& header() const { return header_; }
  const std::string& origin() const { return origin_; }
  // Elements [first, first + out.size()) of `t` as float. std::invalid_argument "<origin>: tensor
  // '<name>' has a non-finite value at element <i>" for NaN or infinity, or when the file got
  // shorter since open(). Reads through a scratch buffer no larger than the request.
  void read(const SafetensorsEntry& t, uint64_t first, std::span<float> out) const;

 private:
  SafetensorsSource() = default;
  SafetensorsHeader header_;
  std::string origin_;
  int fd_ = -1;                             // open(): the file
  std::span<const std::byte> bytes_;        // view(): the caller's bytes
  mutable std::vector<std::byte> scratch_;  // F16/BF16 bytes read from a file
};

// Whole files, for tests, tools and the fuzzer: every tensor decoded into host memory.
SafetensorsContents read_safetensors(const std::filesystem::path& path);
SafetensorsContents parse_safetensors(std::string_view bytes, const std::string& origin);

// Writes tensors, F32 unless their spec says F16 or BF16 (values rounded to nearest even, so a
// value read from such a tensor is written back as the same bytes), in the given order, atomically
// (base/atomic_file.h): a crash or an error mid-write leaves any previous file at `path` intact.
// Values arrive piece by piece through write(); each tensor's elements in order, then the next
// tensor's. commit() makes the file. Test hook: with REMAT_TEST_CRASH_IN_SAVE=1 in the environment
// the process exits (status 99) after writing half of the temporary file, so tests can check that
// nothing is lost.
class SafetensorsWriter {
 public:
  SafetensorsWriter(const std::filesystem::path& path, std::vector<TensorSpec> tensors,
                    const std::map<std::string, std::string>& metadata);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // std::runtime_error for a non-finite value (the reader would refuse the file): nothing is
  // written and the previous file is kept once the writer is destroyed without commit().
  void write(std::span<const float> values);
  void commit();  // std::logic_error unless every tensor was written whole
  uint64_t total_bytes() const { return total_bytes_; }
  uint64_t bytes_written() const { return written_; }

 private:
  void write_raw(const void* data, std::size_t bytes);

  std::filesystem::path path_;
  std::unique_ptr<AtomicFile> file_;
  std::vector<TensorSpec> tensors_;
  std::size_t tensor_ = 0;    // the tensor write() is filling
  uint64_t element_ = 0;      // elements of it written so far
  uint64_t total_bytes_ = 0;  // header and data
  uint64_t written_ = 0;
  bool crash_half_way_ = false;   // REMAT_TEST_CRASH_IN_SAVE
  std::vector<uint16_t> narrow_;  // a piece of F16 or BF16 values on its way out
};

void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
// The length prefix and padded JSON header of a file holding `tensors` in their dtypes.
std::string safetensors_header_bytes(const std::vector<TensorSpec>& tensors,
                                     const std::map<std::string, std::string>& metadata);
std::string serialize_safetensors(const std::vector<NamedTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata);

}  // namespace remat
