#include "formats/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "base/atomic_file.h"
#include "base/half_float.h"
#include "base/json.h"
#include "base/json_writer.h"
#include "base/regular_file.h"
#include "base/whole_file.h"

namespace remat {

const NamedTensor* SafetensorsContents::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

const SafetensorsEntry* SafetensorsHeader::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw std::invalid_argument(origin + ": " + what);
}

int dtype_size(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

// An upper bound on the number of JSON values in `text`: every value but the first follows a
// ',', ':', '[' or '{' outside a string. The parser spends about a hundred bytes per value, so a
// 100 MB header of "[0,0,0,..." would cost gigabytes; headers are refused above a bound that real
// files (a GPT-2 XL header has under 10,000 values) never come near.
uint64_t json_value_bound(std::string_view text) {
  uint64_t n = 1;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == ',' || c == ':' || c == '[' || c == '{') {
      ++n;
    }
  }
  return n;
}
constexpr uint64_t kMaxHeaderValues = 2'000'000;

// The format's header is UTF-8 JSON. Refusing anything else (overlong forms and surrogates too)
// keeps names exact through a save: the writer would have to replace invalid bytes.
bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
    if (b0 < 0xC2 || b0 > 0xF4 || i + n > s.size()) return false;
    uint32_t cp = b0 & (0x7F >> n);
    for (std::size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || (cp >= 0xD800 && cp <= 0xDFFF) ||
        cp > 0x10FFFF)
      return false;
    i += n;
  }
  return true;
}

bool valid_count(const JsonValue& v) {
  return v.type == JsonValue::Type::number && v.number >= 0 && v.number == std::floor(v.number) &&
         v.number <= 9.0e15;
}

SafetensorsEntry parse_entry(const std::string& origin, const std::string& name,
                             const JsonValue& v) {
  SafetensorsEntry e;
  e.name = name;
  if (v.type != JsonValue::Type::object) fail(origin, "tensor '" + name + "' is not a JSON object");
  const JsonValue* dtype = v.find("dtype");
  const JsonValue* shape = v.find("shape");
  const JsonValue* offsets = v.find("data_offsets");
  if (!dtype || dtype->type != JsonValue::Type::string)
    fail(origin, "tensor '" + name + "' has no dtype string");
  e.dtype = dtype->string;
  if (dtype_size(e.dtype) == 0)
    fail(origin, "tensor '" + name + "' has dtype " + e.dtype + "; remat reads F32, F16 and BF16");
  if (!shape || shape->type != JsonValue::Type::array)
    fail(origin, "tensor '" + name + "' has no shape array");
  for (const auto& d : shape->array) {
    if (!valid_count(d)) fail(origin, "tensor '" + name + "' has an invalid shape entry");
    e.shape.push_back(static_cast<int64_t>(d.number));
  }
  if (!offsets || offsets->type != JsonValue::Type::array || offsets->array.size() != 2)
    fail(origin, "tensor '" + name + "' has no [begin, end] data_offsets");
  for (const auto& o : offsets->array)
    if (!valid_count(o)) fail(origin, "tensor '" + name + "' has invalid data_offsets");
  e.begin = static_cast<uint64_t>(offsets->array[0].number);
  e.end = static_cast<uint64_t>(offsets->array[1].number);
  if (e.end < e.begin) fail(origin, "tensor '" + name + "' has data_offsets end before begin");
  // Element count with overflow checks: a hostile shape must not wrap around.
  uint64_t count = 1;
  for (int64_t d : e.shape) {
    if (d != 0 && count > UINT64_MAX / 8 / static_cast<uint64_t>(d))
      fail(origin, "tensor '" + name + "' shape is too large");
    count *= static_cast<uint64_t>(d);
  }
  const uint64_t bytes = count * static_cast<uint64_t>(dtype_size(e.dtype));
  if (bytes != e.end - e.begin)
    fail(origin, "tensor '" + name + "' shape × " + e.dtype + " is " + std::to_string(bytes) +
                     " bytes but its data_offsets span " + std::to_string(e.end - e.begin));
  return e;
}

// The header length from the first 8 bytes, checked against the limit and the file size.
uint64_t header_length(std::span<const std::byte> first, uint64_t file_bytes,
                       const std::string& origin) {
  if (file_bytes < 8 || first.size() < 8)
    fail(origin,
         "file is " + std::to_string(file_bytes) + " bytes, too short for a safetensors header");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(first[i]);
  if (n > kMaxSafetensorsHeaderBytes)
    fail(origin, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
  if (n > file_bytes - 8)
    fail(origin, "header length " + std::to_string(n) + " runs past the end of the file");
  return n;
}

// The data section must be exactly covered by the tensors, without overlap.
void check_tiling(std::vector<SafetensorsEntry>& entries, uint64_t data_len,
                  const std::string& origin) {
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  for (const auto& e : entries) {
    if (e.begin < cursor)
      fail(origin, "tensor '" + e.name + "' overlaps the previous tensor's data");
    if (e.begin > cursor)
      fail(origin, "bytes [" + std::to_string(cursor) + ", " + std::to_string(e.begin) +
                       ") belong to no tensor");
    if (e.end > data_len)
      fail(origin, "tensor '" + e.name + "' data ends at byte " + std::to_string(e.end) +
                       ", past the data section of " + std::to_string(data_len));
    cursor = e.end;
  }
  if (cursor != data_len)
    fail(origin, std::to_string(data_len - cursor) + " trailing bytes belong to no tensor");
}

SafetensorsHeader parse_header(std::string_view text, uint64_t file_bytes,
                               const std::string& origin) {
  if (json_value_bound(text) > kMaxHeaderValues)
    fail(origin, "header has more than " + std::to_string(kMaxHeaderValues) +
                     " JSON values; no model needs that many");
  if (!valid_utf8(text)) fail(origin, "header is not valid UTF-8");
  JsonValue json;
  try {
    json = parse_json(text);
  } catch (const std::invalid_argument& e) {
    fail(origin, std::string("invalid header: ") + e.what());
  }
  if (json.type != JsonValue::Type::object) fail(origin, "header is not a JSON object");
  SafetensorsHeader h;
  h.data_offset = 8 + text.size();
  for (const auto& [name, v] : json.object) {
    if (name != "__metadata__") {
      h.tensors.push_back(parse_entry(origin, name, v));
      continue;
    }
    if (v.type != JsonValue::Type::object) fail(origin, "__metadata__ is not an object");
    for (const auto& [k, mv] : v.object) {
      if (mv.type != JsonValue::Type::string)
        fail(origin, "__metadata__ value '" + k + "' is not a string");
      h.metadata[k] = mv.string;
    }
  }
  check_tiling(h.tensors, file_bytes - h.data_offset, origin);
  return h;
}

// Decodes `n` elements of `dtype` from `raw` into `out`, refusing NaN and infinity.
void decode(const std::string& origin, const SafetensorsEntry& t, uint64_t first,
            const std::byte* raw, float* out, std::size_t n) {
  const bool f32 = t.dtype == "F32", f16 = t.dtype == "F16";
  for (std::size_t i = 0; i < n; ++i) {
    if (f32) {
      if (raw != reinterpret_cast<const std::byte*>(out)) std::memcpy(&out[i], raw + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, raw + 2 * i, 2);
      out[i] = f16 ? f16_to_float(h) : bf16_to_float(h);
    }
    if (!std::isfinite(out[i]))
      fail(origin, "tensor '" + t.name + "' has a non-finite value at element " +
                       std::to_string(first + i));
  }
}

}  // namespace

uint64_t SafetensorsEntry::elements() const {
  // The shape's product: the header checks it against the byte range, and entries that describe
  // another format's tensors (formats/gguf_model.h) have no byte range here.
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

SafetensorsSource::~SafetensorsSource() {
  if (fd_ >= 0) ::close(fd_);
}

SafetensorsSource::SafetensorsSource(SafetensorsSource&& o) noexcept
    : header_(std::move(o.header_)), origin_(std::move(o.origin_)), fd_(o.fd_), bytes_(o.bytes_) {
  o.fd_ = -1;
}

SafetensorsSource& SafetensorsSource::operator=(SafetensorsSource&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    header_ = std::move(o.header_);
    origin_ = std::move(o.origin_);
    fd_ = o.fd_;
    bytes_ = o.bytes_;
    o.fd_ = -1;
  }
  return *this;
}

SafetensorsSource SafetensorsSource::view(std::span<const std::byte> bytes, std::string origin) {
  SafetensorsSource s;
  s.origin_ = std::move(origin);
  s.bytes_ = bytes;
  const uint64_t n = header_length(bytes, bytes.size(), s.origin_);
  s.header_ = parse_header(std::string_view(reinterpret_cast<const char*>(bytes.data()) + 8, n),
                           bytes.size(), s.origin_);
  return s;
}

SafetensorsSource SafetensorsSource::open(const std::filesystem::path& path) {
  SafetensorsSource s;
  s.origin_ = path.string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail(s.origin_, "is a directory; give a .safetensors file");
  RegularFile file(path);
  const uint64_t file_bytes = file.size();
  s.fd_ = file.release();
  std::byte first[8] = {};
  if (file_bytes >= 8) read_file_at(s.fd_, 0, first, 8, s.origin_);
  const uint64_t n = header_length({first, file_bytes >= 8 ? 8u : 0u}, file_bytes, s.origin_);
  std::string text(n, '\0');
  read_file_at(s.fd_, 8, text.data(), n, s.origin_);
  s.header_ = parse_header(text, file_bytes, s.origin_);
  return s;
}

void SafetensorsSource::read(const SafetensorsEntry& t, uint64_t first,
                             std::span<float> out) const {
  if (first > t.elements() || out.size() > t.elements() - first)
    throw std::out_of_range(origin_ + ": elements [" + std::to_string(first) + ", +" +
                            std::to_string(out.size()) + ") are outside tensor '" + t.name + "'");
  const auto size = static_cast<uint64_t>(dtype_size(t.dtype));
  const uint64_t offset = header_.data_offset + t.begin + first * size;
  const std::size_t bytes = out.size() * size;
  if (fd_ < 0) {
    decode(origin_, t, first, bytes_.data() + offset, out.data(), out.size());
    return;
  }
  // F32 lands in `out` directly and is checked in place; halves go through the scratch buffer.
  std::byte* raw = reinterpret_cast<std::byte*>(out.data());
  if (size != 4) {
    scratch_.resize(bytes);
    raw = scratch_.data();
  }
  read_file_at(fd_, offset, raw, bytes, origin_);
  decode(origin_, t, first, raw, out.data(), out.size());
}

namespace {

SafetensorsContents read_all(const SafetensorsSource& source) {
  SafetensorsContents out;
  out.metadata = source.header().metadata;
  for (const auto& e : source.header().tensors) {
    NamedTensor t{e.name, e.shape, std::vector<float>(e.elements()), e.dtype};
    source.read(e, 0, t.values);
    out.tensors.push_back(std::move(t));
  }
  return out;
}

}  // namespace

SafetensorsContents read_safetensors(const std::filesystem::path& path) {
  return read_all(SafetensorsSource::open(path));
}

SafetensorsContents parse_safetensors(std::string_view bytes, const std::string& origin) {
  return read_all(
      SafetensorsSource::view(std::as_bytes(std::span(bytes.data(), bytes.size())), origin));
}

namespace {

// Test-only: REMAT_TEST_CRASH_IN_SAVE=1 makes a save end the process (_exit(99)) after writing
// half of the temporary file, so tests can check that an interrupted save loses nothing.
bool crash_in_save_requested() {
  const char* v = std::getenv("REMAT_TEST_CRASH_IN_SAVE");
  return v && std::string_view(v) == "1";
}

uint64_t element_count(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

// Bytes per element of a dtype the writer stores.
uint64_t written_size(const TensorSpec& t) {
  if (t.dtype == "F32") return 4;
  if (t.dtype == "F16" || t.dtype == "BF16") return 2;
  throw std::invalid_argument("tensor '" + t.name + "': remat writes F32, F16 or BF16, not " +
                              t.dtype);
}

std::vector<TensorSpec> specs_of(const std::vector<NamedTensor>& tensors) {
  std::vector<TensorSpec> specs;
  for (const auto& t : tensors) {
    if (element_count(t.shape) != t.values.size())
      throw std::logic_error("tensor '" + t.name + "' shape does not match its value count");
    specs.push_back({t.name, t.shape});
  }
  return specs;
}

}  // namespace

std::string safetensors_header_bytes(const std::vector<TensorSpec>& tensors,
                                     const std::map<std::string, std::string>& metadata) {
  JsonWriter j;
  j.begin_object();
  if (!metadata.empty()) {
    j.key("__metadata__").begin_object();
    for (const auto& [k, v] : metadata) j.field(k, v);
    j.end_object();
  }
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const uint64_t bytes = written_size(t) * element_count(t.shape);
    j.key(t.name).begin_object().field("dtype", t.dtype).key("shape").begin_array();
    for (int64_t d : t.shape) j.value(d);
    j.end_array().key("data_offsets").begin_array().value(offset).value(offset + bytes);
    j.end_array().end_object();
    offset += bytes;
  }
  j.end_object();
  std::string header = j.str();
  // Pad with spaces so the data section starts 8-byte aligned, as the format recommends.
  while ((header.size() % 8) != 0) header += ' ';
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header;
}

std::string serialize_safetensors(const std::vector<NamedTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  std::string out = safetensors_header_bytes(specs_of(tensors), metadata);
  for (const auto& t : tensors)
    out.append(reinterpret_cast<const char*>(t.values.data()), 4 * t.values.size());
  return out;
}

SafetensorsWriter::SafetensorsWriter(const std::filesystem::path& path,
                                     std::vector<TensorSpec> tensors,
                                     const std::map<std::string, std::string>& metadata)
    : path_(path), tensors_(std::move(tensors)), crash_half_way_(crash_in_save_requested()) {
  const std::string header = safetensors_header_bytes(tensors_, metadata);
  total_bytes_ = header.size();
  for (const auto& t : tensors_) total_bytes_ += written_size(t) * element_count(t.shape);
  file_ = std::make_unique<AtomicFile>(path);
  write_raw(header.data(), header.size());
  while (tensor_ < tensors_.size() && element_count(tensors_[tensor_].shape) == 0) ++tensor_;
}

SafetensorsWriter::~SafetensorsWriter() = default;

void SafetensorsWriter::write_raw(const void* data, std::size_t bytes) {
  if (crash_half_way_ && written_ + bytes >= total_bytes_ / 2) {
    file_->write(data, total_bytes_ / 2 - written_);
    ::_exit(99);
  }
  try {
    file_->write(data, bytes);
  } catch (const std::invalid_argument& e) {  // a full disk is not bad input
    throw std::runtime_error(std::string(e.what()) + "; the previous file is kept");
  }
  written_ += bytes;
}

void SafetensorsWriter::write(std::span<const float> values) {
  std::size_t done = 0;
  while (done < values.size()) {
    if (tensor_ >= tensors_.size())
      throw std::logic_error(path_.string() + ": more values than the tensors hold");
    const TensorSpec& t = tensors_[tensor_];
    const uint64_t left = element_count(t.shape) - element_;
    const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(left, values.size() - done));
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite(values[done + i]))
        throw std::runtime_error(
            path_.string() + ": tensor '" + t.name + "' has a non-finite value at element " +
            std::to_string(element_ + i) + "; nothing written, the previous file is kept");
    if (t.dtype == "F32") {
      write_raw(values.data() + done, 4 * n);
    } else {
      narrow_.resize(n);
      const bool bf16 = t.dtype == "BF16";
      for (std::size_t i = 0; i < n; ++i)
        narrow_[i] = bf16 ? float_to_bf16(values[done + i]) : float_to_f16(values[done + i]);
      write_raw(narrow_.data(), 2 * n);
    }
    done += n;
    element_ += n;
    if (element_ == element_count(t.shape)) {
      element_ = 0;
      do ++tensor_;
      while (tensor_ < tensors_.size() && element_count(tensors_[tensor_].shape) == 0);
    }
  }
}

void SafetensorsWriter::commit() {
  if (tensor_ < tensors_.size())
    throw std::logic_error(path_.string() + ": tensor '" + tensors_[tensor_].name +
                           "' was not written whole");
  try {
    file_->commit();
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string(e.what()) + "; the previous file is kept");
  }
}

void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  SafetensorsWriter w(path, specs_of(tensors), metadata);
  for (const auto& t : tensors) w.write(t.values);
  w.commit();
}

}  // namespace remat
