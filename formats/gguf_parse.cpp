// Parsing one GGUF file's header (formats/gguf_parse.h). A file is refused, in one line
// "<origin>: <what is wrong>", when any of these fails:
//  - it starts with "GGUF", then version 2 or 3 (1, 0, later versions and big-endian files, whose
//    version reads as 0x0N000000, are named as such);
//  - it is not truncated anywhere: header, key, value, string, array, tensor info, data;
//  - counts and lengths fit the bytes left (checked before anything is allocated), and the
//    metadata and tensor infos together lie in the first kMaxGgufHeaderBytes;
//  - keys are non-empty and unique; value types are the 13 GGUF types; arrays are not of arrays;
//    bools are 0 or 1; general.alignment, if present, is a uint32 power of two (as ggml checks);
//  - tensor names are non-empty, unique and under 64 bytes (ggml's GGML_MAX_NAME); 1 to 4
//    dimensions, none 0, under 2^63 elements together; a ggml type id ggml_type_info knows; rows
//    (ne[0]) whole blocks of the type; offsets multiples of the alignment, inside the data
//    section, and no two tensors overlapping.
// Types remat does not decode are accepted here; GgufFile::check_supported() refuses them.
#include "formats/gguf_parse.h"
#include "base/whole_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <type_traits>

namespace remat {
namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw std::invalid_argument(origin + ": " + what);
}

std::string str(uint64_t n) {
  return std::to_string(n);
}

template <class What>
std::string describe(const What& what) {
  if constexpr (std::is_invocable_v<What>)
    return what();
  else
    return std::string(what);
}

}  // namespace

void gguf_read_at(int fd, uint64_t offset, void* out, std::size_t bytes,
                  const std::string& origin) {
  read_file_at(fd, offset, out, bytes, origin);
}

namespace {

// The header's bytes in order, from caller memory or from a file through a buffer of 1 MiB
// reads. Every take() is checked against the end of the file and the header limit first.
class ByteSource {
 public:
  ByteSource(std::span<const std::byte> bytes, const std::string& origin)
      : origin_(origin), bytes_(bytes), size_(bytes.size()) {}
  ByteSource(int fd, uint64_t size, const std::string& origin)
      : origin_(origin), fd_(fd), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }
  // Bytes the header may still take: up to the end of the file or of the header limit.
  uint64_t left() const { return std::min(size_, kMaxGgufHeaderBytes) - pos_; }

  // Refuses unless `n` more bytes of header follow; `what` names them in the message (a string,
  // or a callable making one, so that messages are only built for a refusal).
  template <class What>
  void need(uint64_t n, const What& what) const {
    if (n > size_ - pos_)
      fail(origin_,
           "truncated: the file ends at byte " + str(size_) + ", inside " + describe(what));
    if (n > left())
      fail(origin_, describe(what) + " lies past the first " + str(kMaxGgufHeaderBytes >> 20) +
                        " MiB of the file; no model's metadata is that long");
  }

  template <class What>
  void take(void* out, uint64_t n, const What& what) {
    need(n, what);
    if (n == 0) return;
    if (fd_ < 0) {
      std::memcpy(out, bytes_.data() + pos_, n);
      pos_ += n;
      return;
    }
    auto* dst = static_cast<std::byte*>(out);
    while (n > 0) {
      if (pos_ >= buf_start_ && pos_ < buf_start_ + buf_.size()) {
        const uint64_t k = std::min<uint64_t>(n, buf_start_ + buf_.size() - pos_);
        std::memcpy(dst, buf_.data() + (pos_ - buf_start_), k);
        dst += k, pos_ += k, n -= k;
      } else if (n >= kChunk) {
        gguf_read_at(fd_, pos_, dst, n, origin_);
        pos_ += n, n = 0;
      } else {
        buf_start_ = pos_;
        buf_.resize(std::min<uint64_t>(kChunk, size_ - pos_));
        gguf_read_at(fd_, pos_, buf_.data(), buf_.size(), origin_);
      }
    }
  }

  template <class T, class What>
  T get(const What& what) {
    T v;
    take(&v, sizeof(T), what);
    return v;
  }

  template <class What>
  std::string string(const What& what) {
    const auto n = get<uint64_t>([&] { return "the length of " + describe(what); });
    need(n, [&] { return describe(what) + " (" + str(n) + " bytes)"; });
    std::string s(n, '\0');
    take(s.data(), n, what);
    return s;
  }

 private:
  static constexpr uint64_t kChunk = 1u << 20;
  const std::string& origin_;
  std::span<const std::byte> bytes_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
  std::vector<std::byte> buf_;
  uint64_t buf_start_ = 0;
};

// Bytes a value of this type takes in the file; strings take at least their 8-byte length.
uint64_t min_value_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::uint8:
    case GgufValueType::int8:
    case GgufValueType::boolean:
      return 1;
    case GgufValueType::uint16:
    case GgufValueType::int16:
      return 2;
    case GgufValueType::uint32:
    case GgufValueType::int32:
    case GgufValueType::float32:
      return 4;
    default:
      return 8;
  }
}

bool known_value_type(uint32_t t) {
  return t <= static_cast<uint32_t>(GgufValueType::float64);
}

}  // namespace

// Parses one file's header; a friend of GgufValue, whose storage it fills directly.
class GgufParser {
 public:
  GgufParser(ByteSource& src, const std::string& origin) : src_(src), origin_(origin) {}

  GgufParsedPart parse() {
    GgufParsedPart p{{}, GgufMetadata(origin_), {}, -1};
    p.part.origin = origin_;
    p.part.file_bytes = src_.size();
    p.part.version = header();
    const auto n_tensors = src_.get<uint64_t>("the header's tensor count");
    const auto n_kv = src_.get<uint64_t>("the header's metadata count");
    // A key takes at least 13 bytes (length, one character, type, one byte of value), a tensor
    // info at least 32 (name length and a character, one dimension, type, offset).
    if (n_kv > src_.left() / 13)
      fail(origin_, "header claims " + str(n_kv) + " metadata keys, more than the " +
                        str(src_.left()) +
                        " bytes left can hold: the file is truncated or the "
                        "count is wrong");
    if (n_tensors > src_.left() / 32)
      fail(origin_, "header claims " + str(n_tensors) + " tensors, more than the " +
                        str(src_.left()) +
                        " bytes left can hold: the file is truncated or the "
                        "count is wrong");
    for (uint64_t i = 0; i < n_kv; ++i) key_value(p.metadata, i);
    p.part.alignment = alignment(p.metadata);
    std::map<std::string, uint64_t, std::less<>> names;
    for (uint64_t i = 0; i < n_tensors; ++i) {
      p.tensors.push_back(tensor_info(i, p.part.alignment));
      if (!names.emplace(p.tensors.back().name, i).second)
        fail(origin_, "tensor '" + p.tensors.back().name + "' appears twice");
    }
    place_tensors(p);
    return p;
  }

 private:
  uint32_t header() {
    if (src_.size() < 4)
      fail(origin_, "file is " + str(src_.size()) + " bytes, too short for a GGUF header");
    char magic[4];
    src_.take(magic, 4, "the magic");
    if (std::memcmp(magic, "GGUF", 4) != 0) {
      std::string shown;
      for (char c : magic) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
      fail(origin_, "not a GGUF file: it starts with '" + shown + "', not 'GGUF'");
    }
    const auto version = src_.get<uint32_t>("the version");
    if (version != 0 && (version & 0xFFFF) == 0) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%08X", version);
      fail(origin_, std::string("is big-endian (its version reads as ") + hex +
                        "); remat reads little-endian GGUF files only");
    }
    if (version == 1)
      fail(origin_,
           "is GGUF version 1, which remat does not read (versions 2 and 3); "
           "convert it again with a current llama.cpp");
    if (version != 2 && version != 3)
      fail(origin_, "is GGUF version " + str(version) + "; remat reads versions 2 and 3");
    return version;
  }

  void key_value(GgufMetadata& md, uint64_t i) {
    std::string key = src_.string("the name of key " + str(i));
    if (key.empty()) fail(origin_, "key " + str(i) + " has an empty name");
    if (md.contains(key)) fail(origin_, "key '" + key + "' appears twice");
    const std::string what = "the value of key '" + key + "'";
    GgufValue v;
    v.raw_.clear();
    const auto type = src_.get<uint32_t>("the type of key '" + key + "'");
    if (!known_value_type(type))
      fail(origin_, "key '" + key + "' has unknown value type " + str(type));
    v.type_ = v.element_ = static_cast<GgufValueType>(type);
    if (v.type_ == GgufValueType::array) {
      const auto element = src_.get<uint32_t>("the element type of key '" + key + "'");
      if (!known_value_type(element))
        fail(origin_, "key '" + key + "' is an array of unknown value type " + str(element));
      v.element_ = static_cast<GgufValueType>(element);
      if (v.element_ == GgufValueType::array)
        fail(origin_, "key '" + key + "' is an array of arrays, which remat does not read");
      v.count_ = src_.get<uint64_t>("the length of key '" + key + "'");
      if (v.count_ > src_.left() / min_value_bytes(v.element_))
        fail(origin_, "key '" + key + "' claims " + str(v.count_) + " elements of " +
                          gguf_value_type_name(v.element_) + ", more than the " + str(src_.left()) +
                          " bytes left can hold: the file is truncated or the "
                          "count is wrong");
    }
    if (v.element_ == GgufValueType::string) {
      v.strings_.reserve(v.count_);
      for (uint64_t k = 0; k < v.count_; ++k)
        v.strings_.push_back(
            src_.string([&] { return v.is_array() ? what + " [" + str(k) + "]" : what; }));
    } else {
      const uint64_t n = v.count_ * min_value_bytes(v.element_);
      src_.need(n, what);
      v.raw_.resize(n);
      src_.take(v.raw_.data(), n, what);
      if (v.element_ == GgufValueType::boolean)
        for (uint64_t k = 0; k < n; ++k)
          if (v.raw_[k] != std::byte{0} && v.raw_[k] != std::byte{1})
            fail(origin_, "key '" + key + "' holds the bool byte " +
                              str(static_cast<uint8_t>(v.raw_[k])) + ", not 0 or 1");
    }
    md.set(key, std::move(v));
  }

  uint32_t alignment(const GgufMetadata& md) {
    const GgufValue* a = md.find("general.alignment");
    if (!a) return 32;
    if (a->type() != GgufValueType::uint32)
      fail(origin_, "key 'general.alignment' is " + a->type_name() + ", not uint32");
    const auto n = static_cast<uint32_t>(*a->as_uint());
    if (n == 0 || (n & (n - 1)) != 0)
      fail(origin_, "general.alignment " + str(n) + " is not a power of two");
    return n;
  }

  GgufTensor tensor_info(uint64_t i, uint32_t alignment) {
    GgufTensor t;
    t.name = src_.string("the name of tensor " + str(i));
    if (t.name.empty()) fail(origin_, "tensor " + str(i) + " has an empty name");
    if (t.name.size() >= 64)
      fail(origin_, "tensor name '" + t.name + "' is " + str(t.name.size()) +
                        " bytes; ggml allows at most 63");
    const std::string of = "tensor '" + t.name + "'";
    const auto n_dims = src_.get<uint32_t>("the dimension count of " + of);
    if (n_dims == 0 || n_dims > 4)
      fail(origin_, of + " has " + str(n_dims) + " dimensions; GGUF allows 1 to 4");
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const auto n = src_.get<uint64_t>("the dimensions of " + of);
      if (n == 0) fail(origin_, of + " has dimension " + str(d) + " of size 0");
      constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      if (n > kMax || elements > kMax / n)
        fail(origin_, of + " has dimension " + str(d) + " of size " + str(n) +
                          ", past 2^63 elements in all");
      elements *= n;
      t.ne.push_back(n);
    }
    const auto id = src_.get<uint32_t>("the type of " + of);
    const auto info = ggml_type_info(id);
    if (!info) fail(origin_, of + " has unknown ggml type id " + str(id));
    t.type = info->type;
    if (t.ne[0] % info->block_values != 0)
      fail(origin_, of + " has rows of " + str(t.ne[0]) + " values, not whole blocks of " +
                        std::string(info->name) + " (" + str(info->block_values) +
                        " values a block)");
    // Checked before ggml_row_bytes: a row of 2^62 F32 values alone passes 2^64 bytes.
    const uint64_t blocks_a_row = t.ne[0] / info->block_values;
    if (blocks_a_row > std::numeric_limits<uint64_t>::max() / info->block_bytes)
      fail(origin_, of + " takes more than 2^64 bytes");
    const uint64_t row_bytes = ggml_row_bytes(t.type, t.ne[0]);
    const uint64_t rows = elements / t.ne[0];
    if (rows > std::numeric_limits<uint64_t>::max() / row_bytes)
      fail(origin_, of + " takes more than 2^64 bytes");
    t.bytes = row_bytes * rows;
    t.offset = src_.get<uint64_t>("the offset of " + of);
    if (t.offset % alignment != 0)
      fail(origin_, of + " has offset " + str(t.offset) + ", not a multiple of the alignment " +
                        str(alignment));
    return t;
  }

  // The data section starts at the first aligned byte after the tensor infos; every tensor must
  // lie inside it, and no two may share a byte. Offsets become absolute.
  void place_tensors(GgufParsedPart& p) {
    const uint64_t a = p.part.alignment;
    p.part.data_offset = (src_.pos() + a - 1) / a * a;
    p.part.tensor_count = p.tensors.size();
    if (p.tensors.empty()) return;
    if (p.part.data_offset > src_.size())
      fail(origin_, "truncated: the file ends at byte " + str(src_.size()) +
                        ", before its data section at byte " + str(p.part.data_offset));
    const uint64_t data_bytes = src_.size() - p.part.data_offset;
    for (const GgufTensor& t : p.tensors)
      if (t.offset > data_bytes || t.bytes > data_bytes - t.offset)
        fail(origin_, "tensor '" + t.name + "' needs " + str(t.bytes) + " bytes at offset " +
                          str(t.offset) + " of a data section of " + str(data_bytes) +
                          ": the file is truncated or the offset is wrong");
    std::vector<const GgufTensor*> by_offset;
    for (const GgufTensor& t : p.tensors) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GgufTensor* x, const GgufTensor* y) { return x->offset < y->offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i) {
      const GgufTensor& prev = *by_offset[i - 1];
      if (by_offset[i]->offset < prev.offset + prev.bytes)
        fail(origin_, "tensor '" + by_offset[i]->name + "' overlaps tensor '" + prev.name +
                          "' in the data section");
    }
    for (GgufTensor& t : p.tensors) t.offset += p.part.data_offset;
  }

  ByteSource& src_;
  const std::string& origin_;
};

GgufParsedPart parse_gguf(std::span<const std::byte> bytes, const std::string& origin) {
  ByteSource src(bytes, origin);
  return GgufParser(src, origin).parse();
}

GgufParsedPart parse_gguf(int fd, uint64_t file_bytes, const std::string& origin) {
  ByteSource src(fd, file_bytes, origin);
  GgufParsedPart p = GgufParser(src, origin).parse();
  p.fd = fd;
  return p;
}

}  // namespace remat
