// GGUF files as one model (formats/gguf.h): one file, a view of caller bytes, or the parts of a
// split, each part's header parsed and checked by formats/gguf_parse.cpp. A split is refused,
// in one line "<origin>: <what is wrong>", unless split.count is 1 to 65535, split.no below it,
// split.tensors.count the number of tensors of all parts, every part agrees on split.count and
// holds the split.no its name says, and no tensor name is in two parts.
#include "formats/gguf.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "base/regular_file.h"
#include "formats/gguf_parse.h"

namespace remat {
namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw std::invalid_argument(origin + ": " + what);
}

std::string str(uint64_t n) {
  return std::to_string(n);
}

// The split keys of one part, checked for type and range.
struct SplitKeys {
  uint32_t count = 1, no = 0;
  std::optional<uint64_t> tensors;
};

SplitKeys split_keys(const GgufParsedPart& p) {
  const std::string& origin = p.part.origin;
  SplitKeys s;
  const auto count = p.metadata.uint(kGgufSplitCount);
  const auto no = p.metadata.uint(kGgufSplitNo);
  s.tensors = p.metadata.uint(kGgufSplitTensorsCount);
  if (count && (*count == 0 || *count > 65535))
    fail(origin, "split.count " + str(*count) + " is not a number of parts (1 to 65535)");
  s.count = count ? static_cast<uint32_t>(*count) : 1;
  if (s.count > 1 && !no) fail(origin, "has split.count " + str(s.count) + " but no split.no");
  if (no && *no >= s.count)
    fail(origin, "split.no " + str(*no) + " is not below split.count " + str(s.count));
  s.no = no ? static_cast<uint32_t>(*no) : 0;
  return s;
}

}  // namespace

uint64_t GgufTensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  return n;
}

uint64_t GgufTensor::rows() const {
  return ne.empty() ? 0 : elements() / ne[0];
}

std::vector<int64_t> GgufTensor::shape() const {
  return std::vector<int64_t>(ne.rbegin(), ne.rend());
}

std::filesystem::path gguf_split_path(const std::string& prefix, uint32_t no, uint32_t count) {
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, "-%05u-of-%05u.gguf", no + 1, count);
  return prefix + suffix;
}

GgufFile::~GgufFile() {
  close_all();
}

void GgufFile::close_all() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
  fds_.clear();
}

GgufFile::GgufFile(GgufFile&& o) noexcept
    : metadata_(std::move(o.metadata_)),
      tensors_(std::move(o.tensors_)),
      by_name_(std::move(o.by_name_)),
      parts_(std::move(o.parts_)),
      fds_(std::move(o.fds_)),
      bytes_(o.bytes_),
      split_count_(o.split_count_) {
  o.fds_.clear();
}

GgufFile& GgufFile::operator=(GgufFile&& o) noexcept {
  if (this != &o) {
    close_all();
    metadata_ = std::move(o.metadata_);
    tensors_ = std::move(o.tensors_);
    by_name_ = std::move(o.by_name_);
    parts_ = std::move(o.parts_);
    fds_ = std::move(o.fds_);
    bytes_ = o.bytes_;
    split_count_ = o.split_count_;
    o.fds_.clear();
  }
  return *this;
}

const GgufTensor* GgufFile::tensor(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

namespace {

// Opens `path` and parses its header; the descriptor goes to `fds` at once, so it is closed
// with the GgufFile that owns the list even when parsing throws.
GgufParsedPart open_part(const std::filesystem::path& path, std::vector<int>& fds) {
  const std::string origin = path.string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(origin, "is a directory; give a .gguf file");
  RegularFile file(path);
  const uint64_t size = file.size();
  fds.reserve(fds.size() + 1);  // so that push_back cannot throw with the descriptor in hand
  fds.push_back(file.release());
  return parse_gguf(fds.back(), size, origin);
}

}  // namespace

GgufFile GgufFile::view(std::span<const std::byte> bytes, std::string origin) {
  GgufFile f;
  GgufParsedPart p = parse_gguf(bytes, origin);
  const SplitKeys s = split_keys(p);
  if (s.count == 1 && s.tensors && *s.tensors != p.tensors.size())
    fail(origin, "split.tensors.count is " + str(*s.tensors) + " but the file holds " +
                     str(p.tensors.size()) + " tensors");
  f.bytes_ = bytes;
  f.split_count_ = s.count;
  f.metadata_ = std::move(p.metadata);
  f.tensors_ = std::move(p.tensors);
  f.parts_.push_back(std::move(p.part));
  for (std::size_t i = 0; i < f.tensors_.size(); ++i) f.by_name_.emplace(f.tensors_[i].name, i);
  return f;
}

GgufFile GgufFile::open(const std::filesystem::path& path) {
  GgufFile f;
  GgufParsedPart given = open_part(path, f.fds_);
  const SplitKeys s = split_keys(given);
  std::vector<GgufParsedPart> parts;
  if (s.count == 1) {
    parts.push_back(std::move(given));
  } else {
    // The other parts are named like this one with their own numbers.
    const std::string name = path.string();
    const std::string suffix = gguf_split_path("", s.no, s.count).string();
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      fail(name, "is part " + str(s.no + 1) + " of " + str(s.count) +
                     " of a split model, but its name does not end in '" + suffix +
                     "', so the other parts cannot be found");
    const std::string prefix = name.substr(0, name.size() - suffix.size());
    for (uint32_t i = 0; i < s.count; ++i) {
      if (i == s.no) {
        parts.push_back(std::move(given));
        continue;
      }
      const std::filesystem::path part_path = gguf_split_path(prefix, i, s.count);
      std::error_code ec;
      if (!std::filesystem::exists(part_path, ec))
        fail(name, "is part " + str(s.no + 1) + " of " + str(s.count) + ", but part " + str(i + 1) +
                       " (" + part_path.string() + ") does not exist");
      parts.push_back(open_part(part_path, f.fds_));
      const SplitKeys k = split_keys(parts.back());
      const std::string& origin = parts.back().part.origin;
      if (k.count != s.count)
        fail(origin, "has split.count " + str(k.count) + ", but " + name + " has " + str(s.count));
      if (k.no != i)
        fail(origin, "has split.no " + str(k.no) + ", but its name makes it part " + str(i + 1) +
                         " (split.no " + str(i) + ")");
      if (k.tensors != s.tensors) fail(origin, "split.tensors.count differs from " + name + "'s");
    }
  }
  if (s.tensors) {
    uint64_t total = 0;
    for (const GgufParsedPart& p : parts) total += p.tensors.size();
    if (total != *s.tensors)
      fail(parts.front().part.origin, "split.tensors.count is " + str(*s.tensors) + " but the " +
                                          (parts.size() == 1 ? std::string("file holds ")
                                                             : str(parts.size()) + " parts hold ") +
                                          str(total) + " tensors");
  }
  f.split_count_ = s.count;
  f.metadata_ = std::move(parts.front().metadata);
  // The same descriptors, now in part order.
  for (uint32_t i = 0; i < parts.size(); ++i) f.fds_[i] = parts[i].fd;
  for (uint32_t i = 0; i < parts.size(); ++i) {
    for (GgufTensor& t : parts[i].tensors) {
      t.part = i;
      const auto [it, fresh] = f.by_name_.emplace(t.name, f.tensors_.size());
      if (!fresh)
        fail(parts[i].part.origin,
             "tensor '" + t.name + "' is also in " + f.parts_[f.tensors_[it->second].part].origin);
      f.tensors_.push_back(std::move(t));
    }
    f.parts_.push_back(std::move(parts[i].part));
  }
  return f;
}

void GgufFile::check_supported() const {
  for (const GgufTensor& t : tensors_) {
    const GgmlTypeInfo& info = ggml_type_info(t.type);
    if (!info.supported)
      fail(parts_[t.part].origin, "tensor '" + t.name + "' has type " + std::string(info.name) +
                                      ", which remat does not decode");
  }
}

void GgufFile::read(const GgufTensor& t, uint64_t byte_offset, std::span<std::byte> out) const {
  const std::string& origin = parts_.at(t.part).origin;
  if (byte_offset > t.bytes || out.size() > t.bytes - byte_offset)
    throw std::out_of_range(origin + ": bytes [" + str(byte_offset) + ", +" + str(out.size()) +
                            ") are outside tensor '" + t.name + "' (" + str(t.bytes) + " bytes)");
  if (out.empty()) return;
  if (fds_.empty()) {
    std::memcpy(out.data(), bytes_.data() + t.offset + byte_offset, out.size());
    return;
  }
  gguf_read_at(fds_.at(t.part), t.offset + byte_offset, out.data(), out.size(), origin);
}

}  // namespace remat
