// GGUF files (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), the container llama.cpp
// and ggml keep models in: a little-endian header ("GGUF", version, counts), typed metadata
// key/value pairs, tensor infos (name, dimensions, ggml type, offset), then the tensor data, each
// tensor aligned to `general.alignment` (default 32). remat reads versions 2 and 3, one file or
// the parts llama.cpp's gguf-split writes, and writes version 3 (formats/gguf_writer.h).
//
// Reading is streamed as for safetensors: open() reads the header and tensor infos only and read()
// fetches tensor bytes piece by piece later (pread); view() reads the same from caller bytes.
// Tensor bytes are returned raw, as stored; formats/gguf_blocks.h decodes the block types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf_types.h"

namespace remat {

// The type of a metadata value, as the file stores it (gguf_type in ggml's gguf.h).
enum class GgufValueType : uint32_t {
  uint8 = 0,
  int8 = 1,
  uint16 = 2,
  int16 = 3,
  uint32 = 4,
  int32 = 5,
  float32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  uint64 = 10,
  int64 = 11,
  float64 = 12,
};

// "uint32", "float32", "bool", "string", "array", ...; "type 13" for an id that is none of them.
std::string gguf_value_type_name(GgufValueType t);

// One metadata value: a scalar or a flat array (arrays of arrays are refused by the reader).
// Numbers and bools are kept as the file stores them (little-endian bytes, bool as one byte 0 or
// 1); strings as std::string.
class GgufValue {
 public:
  GgufValue() : raw_(1) {}  // uint8 0
  // Scalars: T is one of uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t,
  // float, double or bool; the GGUF type follows from it.
  template <class T>
  static GgufValue of(T value);
  static GgufValue of(std::string value);
  static GgufValue of(const char* value) { return of(std::string(value)); }
  // Arrays of the same element types (std::vector<bool> included), or of strings.
  template <class T>
  static GgufValue array(const std::vector<T>& values);
  static GgufValue array(std::vector<std::string> values);

  GgufValueType type() const { return type_; }
  // The elements' type of an array; type() otherwise.
  GgufValueType element_type() const { return element_; }
  bool is_array() const { return type_ == GgufValueType::array; }
  // Elements of an array; 1 for a scalar.
  uint64_t size() const;
  // "uint32", "string", "array of float32", ...
  std::string type_name() const;

  // The i-th element (0 for a scalar) converted without loss, or nullopt when it cannot be: an
  // integer of any width for as_int/as_uint (in range), float32/float64 for as_double, bool,
  // string.
  std::optional<int64_t> as_int(uint64_t i = 0) const;
  std::optional<uint64_t> as_uint(uint64_t i = 0) const;
  std::optional<double> as_double(uint64_t i = 0) const;
  std::optional<bool> as_bool(uint64_t i = 0) const;
  const std::string* as_string(uint64_t i = 0) const;

  // Bytes of the numeric or bool elements, little-endian as stored (empty for strings).
  const std::vector<std::byte>& raw() const { return raw_; }
  // The string (one) or the array's strings.
  const std::vector<std::string>& strings() const { return strings_; }

  bool operator==(const GgufValue&) const = default;

 private:
  friend class GgufParser;
  GgufValueType type_ = GgufValueType::uint8;
  GgufValueType element_ = GgufValueType::uint8;
  uint64_t count_ = 1;
  std::vector<std::byte> raw_;
  std::vector<std::string> strings_;
};

// Metadata in file order with lookup by key. The typed getters return nullopt for an absent key
// and throw std::invalid_argument "<origin>: key '<key>' is <type>, not <expected>" when the value
// has another type (integers of any width are accepted where an integer is asked for, if the
// value fits).
class GgufMetadata {
 public:
  struct Entry {
    std::string key;
    GgufValue value;
    bool operator==(const Entry&) const = default;
  };

  explicit GgufMetadata(std::string origin = "gguf metadata") : origin_(std::move(origin)) {}

  const GgufValue* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  // Sets `key` (replacing a value in place, else appending); std::invalid_argument for "".
  void set(const std::string& key, GgufValue value);
  void erase(std::string_view key);
  const std::vector<Entry>& entries() const { return entries_; }
  const std::string& origin() const { return origin_; }

  std::optional<std::string> string(std::string_view key) const;
  std::optional<uint64_t> uint(std::string_view key) const;  // any integer type, >= 0
  std::optional<int64_t> integer(std::string_view key) const;
  std::optional<double> number(std::string_view key) const;  // float32 or float64
  std::optional<bool> boolean(std::string_view key) const;
  // Arrays (e.g. tokenizer.ggml.tokens, .scores, .token_type): an array of the right kind, each
  // element converted (int32s and integers: integer elements of any width, refused when one does
  // not fit; floats: float32, or float64 rounded to float).
  std::optional<std::vector<std::string>> strings(std::string_view key) const;
  std::optional<std::vector<float>> floats(std::string_view key) const;
  std::optional<std::vector<int32_t>> int32s(std::string_view key) const;
  std::optional<std::vector<int64_t>> integers(std::string_view key) const;

  bool operator==(const GgufMetadata& o) const { return entries_ == o.entries_; }

 private:
  [[noreturn]] void mismatch(std::string_view key, const GgufValue& v, const char* want) const;

  std::string origin_;
  std::vector<Entry> entries_;
  std::map<std::string, std::size_t, std::less<>> index_;
};

// One tensor: its dimensions in ggml order (ne[0] is the row length, the fastest-varying index),
// its type, and where its bytes are.
struct GgufTensor {
  std::string name;               // e.g. "blk.0.attn_q.weight"
  GgmlType type = GgmlType::f32;  // any type ggml_type_info knows (see GgufFile::check_supported)
  std::vector<uint64_t> ne;       // 1 to 4 dimensions, none 0; ne[0] a multiple of the block size
  uint64_t offset = 0;            // absolute file offset of the first byte, in part `part`
  uint64_t bytes = 0;             // ggml_row_bytes(type, ne[0]) × rows()
  uint32_t part = 0;              // which file of a split (index into GgufFile::parts())
  uint64_t elements() const;
  uint64_t rows() const;  // elements() / ne[0]
  // Row-major shape (ne reversed), as safetensors and PyTorch write it.
  std::vector<int64_t> shape() const;
};

// One file of a model: one for a plain file, split.count for a split.
struct GgufPart {
  std::string origin;         // path, or the origin given to view()
  uint32_t version = 3;       // 2 or 3
  uint32_t alignment = 32;    // general.alignment
  uint64_t data_offset = 0;   // file offset of the data section
  uint64_t file_bytes = 0;    // size of the file
  uint64_t tensor_count = 0;  // tensors stored in this part
};

// Metadata keys of gguf-split's parts (llama.cpp's LLM_KV_SPLIT_*): the part's number from 0
// (uint16), the number of parts (uint16), and the tensors of all parts together (int32). The
// parts are named <prefix>-00001-of-0000N.gguf ... (gguf_split_path) and all metadata but these
// keys is in the first.
inline constexpr std::string_view kGgufSplitNo = "split.no";
inline constexpr std::string_view kGgufSplitCount = "split.count";
inline constexpr std::string_view kGgufSplitTensorsCount = "split.tensors.count";
// "<prefix>-<no + 1, 5 digits>-of-<count, 5 digits>.gguf", as llama_split_path names part `no`.
std::filesystem::path gguf_split_path(const std::string& prefix, uint32_t no, uint32_t count);

// Header limit: metadata and tensor infos reaching past this many bytes are refused before they
// are read. The largest vocabularies take a few MB. Parsing allocates at most about four times
// the bytes it reads (an empty string is 8 bytes in the file, 32 in memory), so the most a
// hostile header can cost is about 1 GiB, and every count is checked against the bytes left.
inline constexpr uint64_t kMaxGgufHeaderBytes = 256ull << 20;

// A GGUF model whose header has been read and validated (the rules open gguf_parse.cpp and
// gguf.cpp); errors are std::invalid_argument "<origin>: <what is wrong>". Tensors of types that
// remat does not decode (GgmlTypeInfo::supported false) are listed like any other, so tools can
// show such files; check_supported() refuses them.
class GgufFile {
 public:
  // Reads the header of `path`; the data is read by later read() calls. When the file is one part
  // of a split (split.count > 1), every part is opened (the names follow gguf_split_path), checked
  // against the others, and their tensors are presented as one list; metadata is the first part's.
  static GgufFile open(const std::filesystem::path& path);
  // Bytes the caller owns and keeps alive while the file is used; nothing is copied. One buffer
  // is one part: a split part's own tensors are listed and split_count() tells there are others.
  static GgufFile view(std::span<const std::byte> bytes, std::string origin);
  ~GgufFile();
  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;

  const std::string& origin() const { return parts_.front().origin; }
  const GgufMetadata& metadata() const { return metadata_; }
  // In file order: the first part's tensors in the order of its tensor infos, then the second's...
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* tensor(std::string_view name) const;
  const std::vector<GgufPart>& parts() const { return parts_; }
  // split.count as the file says (1 without split keys); parts().size() unless view() read a part.
  uint32_t split_count() const { return split_count_; }
  uint32_t version() const { return parts_.front().version; }

  // std::invalid_argument "<origin>: tensor '<name>' has type <type>, which remat does not decode"
  // for the first tensor of an unsupported type.
  void check_supported() const;
  // Bytes [byte_offset, byte_offset + out.size()) of `t`'s data, as stored. std::out_of_range
  // outside the tensor; std::invalid_argument when the file got shorter since open().
  void read(const GgufTensor& t, uint64_t byte_offset, std::span<std::byte> out) const;

 private:
  GgufFile() = default;
  void close_all();

  GgufMetadata metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, std::size_t, std::less<>> by_name_;
  std::vector<GgufPart> parts_;
  std::vector<int> fds_;              // open(): one per part
  std::span<const std::byte> bytes_;  // view(): the caller's bytes
  uint32_t split_count_ = 1;
};

}  // namespace remat
