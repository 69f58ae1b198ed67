// Writing GGUF version 3 files (formats/gguf_writer.h): the header built in memory, then the
// tensor data streamed into an AtomicFile with ggml's padding after every tensor.
#include "formats/gguf_writer.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

#include "base/atomic_file.h"
#include "base/half_float.h"

namespace remat {
namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw std::invalid_argument(origin + ": " + what);
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

void put_value(std::string& out, const GgufValue& v) {
  put<uint32_t>(out, static_cast<uint32_t>(v.type()));
  if (v.is_array()) {
    put<uint32_t>(out, static_cast<uint32_t>(v.element_type()));
    put<uint64_t>(out, v.size());
  }
  if (v.element_type() == GgufValueType::string) {
    for (const std::string& s : v.strings()) put_string(out, s);
  } else {
    out.append(reinterpret_cast<const char*>(v.raw().data()), v.raw().size());
  }
}

uint32_t alignment_of(const GgufMetadata& md, const std::string& origin) {
  const GgufValue* a = md.find("general.alignment");
  if (!a) return 32;
  const auto n = a->type() == GgufValueType::uint32 ? a->as_uint() : std::nullopt;
  if (!n || *n == 0 || (*n & (*n - 1)) != 0)
    fail(origin, "general.alignment must be a uint32 power of two");
  return static_cast<uint32_t>(*n);
}

uint64_t padding(uint64_t bytes, uint64_t alignment) {
  return (alignment - bytes % alignment) % alignment;
}

void check_spec(const GgufTensorSpec& t, const std::string& origin) {
  if (t.name.empty()) fail(origin, "a tensor name cannot be empty");
  if (t.name.size() >= 64)
    fail(origin, "tensor name '" + t.name + "' is " + std::to_string(t.name.size()) +
                     " bytes; ggml allows at most 63");
  const std::string of = "tensor '" + t.name + "'";
  if (t.ne.empty() || t.ne.size() > 4)
    fail(origin, of + " has " + std::to_string(t.ne.size()) + " dimensions; GGUF allows 1 to 4");
  uint64_t elements = 1;
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (uint64_t d : t.ne) {
    if (d == 0) fail(origin, of + " has a dimension of size 0");
    if (d > kMax || elements > kMax / d) fail(origin, of + " has 2^63 elements or more");
    elements *= d;
  }
  const GgmlTypeInfo& info = ggml_type_info(t.type);
  if (t.ne[0] % info.block_values != 0)
    fail(origin, of + " has rows of " + std::to_string(t.ne[0]) + " values, not whole blocks of " +
                     std::string(info.name) + " (" + std::to_string(info.block_values) +
                     " values a block)");
  const uint64_t row = ggml_row_bytes(t.type, t.ne[0]);
  if (elements / t.ne[0] > std::numeric_limits<uint64_t>::max() / 2 / row)
    fail(origin, of + " is too large");
}

}  // namespace

uint64_t gguf_tensor_bytes(const GgufTensorSpec& t) {
  uint64_t rows = 1;
  for (std::size_t i = 1; i < t.ne.size(); ++i) rows *= t.ne[i];
  return ggml_row_bytes(t.type, t.ne.at(0)) * rows;
}

std::string gguf_header_bytes(const GgufMetadata& metadata,
                              const std::vector<GgufTensorSpec>& tensors,
                              const std::string& origin) {
  const uint32_t alignment = alignment_of(metadata, origin);
  std::set<std::string, std::less<>> names;
  for (const GgufTensorSpec& t : tensors) {
    check_spec(t, origin);
    if (!names.insert(t.name).second) fail(origin, "tensor '" + t.name + "' appears twice");
  }
  std::string out = "GGUF";
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors.size());
  put<uint64_t>(out, metadata.entries().size());
  for (const auto& [key, value] : metadata.entries()) {
    put_string(out, key);
    put_value(out, value);
  }
  uint64_t offset = 0;
  for (const GgufTensorSpec& t : tensors) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) put<uint64_t>(out, d);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    const uint64_t bytes = gguf_tensor_bytes(t);
    if (offset > std::numeric_limits<uint64_t>::max() / 2 - bytes)
      fail(origin, "the tensors take more than 2^63 bytes");
    offset += bytes + padding(bytes, alignment);
  }
  out.append(padding(out.size(), alignment), '\0');
  return out;
}

GgufWriter::GgufWriter(const std::filesystem::path& path, const GgufMetadata& metadata,
                       std::vector<GgufTensorSpec> tensors)
    : path_(path), tensors_(std::move(tensors)) {
  const std::string header = gguf_header_bytes(metadata, tensors_, path_.string());
  alignment_ = alignment_of(metadata, path_.string());
  total_bytes_ = header.size();
  for (const GgufTensorSpec& t : tensors_) {
    sizes_.push_back(gguf_tensor_bytes(t));
    total_bytes_ += sizes_.back() + padding(sizes_.back(), alignment_);
  }
  file_ = std::make_unique<AtomicFile>(path);
  write_raw(header.data(), header.size());
}

GgufWriter::~GgufWriter() = default;

void GgufWriter::write_raw(const void* data, std::size_t bytes) {
  try {
    file_->write(data, bytes);
  } catch (const std::invalid_argument& e) {  // a full disk is not bad input
    throw std::runtime_error(std::string(e.what()) + "; the previous file is kept");
  }
  written_ += bytes;
}

void GgufWriter::advance(uint64_t bytes) {
  done_ += bytes;
  if (done_ < sizes_[tensor_]) return;
  static constexpr char kZeros[256] = {};
  uint64_t pad = padding(sizes_[tensor_], alignment_);
  while (pad > 0) {
    const auto n = static_cast<std::size_t>(std::min<uint64_t>(pad, sizeof kZeros));
    write_raw(kZeros, n);
    pad -= n;
  }
  ++tensor_;
  done_ = 0;
}

void GgufWriter::write(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    if (tensor_ >= tensors_.size())
      throw std::logic_error(path_.string() + ": more bytes than the tensors hold");
    const auto n =
        static_cast<std::size_t>(std::min<uint64_t>(sizes_[tensor_] - done_, bytes.size()));
    write_raw(bytes.data(), n);
    advance(n);
    bytes = bytes.subspan(n);
  }
}

void GgufWriter::write(std::span<const float> values) {
  uint16_t halves[1024];
  while (!values.empty()) {
    if (tensor_ >= tensors_.size())
      throw std::logic_error(path_.string() + ": more values than the tensors hold");
    const GgufTensorSpec& t = tensors_[tensor_];
    const uint64_t size = t.type == GgmlType::f32 ? 4 : 2;
    if (t.type != GgmlType::f32 && t.type != GgmlType::f16 && t.type != GgmlType::bf16)
      throw std::logic_error(path_.string() + ": tensor '" + t.name + "' is " +
                             std::string(ggml_type_info(t.type).name) +
                             "; write its blocks as bytes");
    if (done_ % size != 0)
      throw std::logic_error(path_.string() + ": tensor '" + t.name +
                             "' was left inside an element by a write of bytes");
    std::size_t n = static_cast<std::size_t>(
        std::min<uint64_t>((sizes_[tensor_] - done_) / size, values.size()));
    if (size == 4) {
      write_raw(values.data(), 4 * n);
    } else {
      n = std::min(n, std::size(halves));
      for (std::size_t i = 0; i < n; ++i)
        halves[i] = t.type == GgmlType::f16 ? float_to_f16(values[i]) : float_to_bf16(values[i]);
      write_raw(halves, 2 * n);
    }
    advance(size * n);
    values = values.subspan(n);
  }
}

void GgufWriter::commit() {
  if (tensor_ < tensors_.size())
    throw std::logic_error(path_.string() + ": tensor '" + tensors_[tensor_].name +
                           "' was not written whole");
  try {
    file_->commit();
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string(e.what()) + "; the previous file is kept");
  }
}

}  // namespace remat
