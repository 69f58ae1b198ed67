#include "runtime/safetensors.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "graph/json.h"

namespace remat {

const NamedTensor* SafetensorsContents::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw std::invalid_argument(origin + ": " + what);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t man = h & 0x3FF;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(man), -24);  // zero or subnormal
    return sign ? -f : f;
  }
  uint32_t bits = exp == 31 ? sign | 0x7F800000u | (man << 13)
                            : sign | ((exp + 112) << 23) | (man << 13);
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
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

struct Entry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

Entry parse_entry(const std::string& origin, const std::string& name, const JsonValue& v) {
  Entry e;
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
    if (d.type != JsonValue::Type::number || d.number < 0 || d.number != std::floor(d.number) ||
        d.number > 9.0e15)
      fail(origin, "tensor '" + name + "' has an invalid shape entry");
    e.shape.push_back(static_cast<int64_t>(d.number));
  }
  if (!offsets || offsets->type != JsonValue::Type::array || offsets->array.size() != 2)
    fail(origin, "tensor '" + name + "' has no [begin, end] data_offsets");
  for (const auto& o : offsets->array)
    if (o.type != JsonValue::Type::number || o.number < 0 || o.number != std::floor(o.number) ||
        o.number > 9.0e15)
      fail(origin, "tensor '" + name + "' has invalid data_offsets");
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

NamedTensor decode(const std::string& origin, const Entry& e, const char* data) {
  NamedTensor t;
  t.name = e.name;
  t.shape = e.shape;
  t.source_dtype = e.dtype;
  const uint64_t n = (e.end - e.begin) / static_cast<uint64_t>(dtype_size(e.dtype));
  t.values.resize(n);
  const char* p = data + e.begin;
  for (uint64_t i = 0; i < n; ++i) {
    if (e.dtype == "F32") {
      std::memcpy(&t.values[i], p + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      t.values[i] = e.dtype == "F16" ? half_to_float(h) : bf16_to_float(h);
    }
    if (!std::isfinite(t.values[i]))
      fail(origin, "tensor '" + e.name + "' has a non-finite value at element " + std::to_string(i));
  }
  return t;
}

}  // namespace

SafetensorsContents parse_safetensors(const std::string& bytes, const std::string& origin) {
  if (bytes.size() < 8) fail(origin, "file is " + std::to_string(bytes.size()) +
                                         " bytes, too short for a safetensors header");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[i]);
  if (header_len > kMaxSafetensorsHeaderBytes)
    fail(origin, "header length " + std::to_string(header_len) + " exceeds the 100 MB limit");
  if (header_len > bytes.size() - 8)
    fail(origin, "header length " + std::to_string(header_len) + " runs past the end of the file");
  const std::string_view header_text = std::string_view(bytes).substr(8, header_len);
  if (json_value_bound(header_text) > kMaxHeaderValues)
    fail(origin, "header has more than " + std::to_string(kMaxHeaderValues) +
                     " JSON values; no model needs that many");
  JsonValue header;
  try {
    header = parse_json(header_text);
  } catch (const std::invalid_argument& e) {
    fail(origin, std::string("invalid header: ") + e.what());
  }
  if (header.type != JsonValue::Type::object) fail(origin, "header is not a JSON object");

  SafetensorsContents out;
  std::vector<Entry> entries;
  for (const auto& [name, v] : header.object) {
    if (name == "__metadata__") {
      if (v.type != JsonValue::Type::object) fail(origin, "__metadata__ is not an object");
      for (const auto& [k, mv] : v.object) {
        if (mv.type != JsonValue::Type::string) fail(origin, "__metadata__ value '" + k + "' is not a string");
        out.metadata[k] = mv.string;
      }
      continue;
    }
    entries.push_back(parse_entry(origin, name, v));
  }
  // The data section must be exactly covered by the tensors, without overlap.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const uint64_t data_len = bytes.size() - 8 - header_len;
  uint64_t cursor = 0;
  for (const auto& e : entries) {
    if (e.begin < cursor) fail(origin, "tensor '" + e.name + "' overlaps the previous tensor's data");
    if (e.begin > cursor) fail(origin, "bytes [" + std::to_string(cursor) + ", " +
                                           std::to_string(e.begin) + ") belong to no tensor");
    if (e.end > data_len) fail(origin, "tensor '" + e.name + "' data ends at byte " +
                                           std::to_string(e.end) + ", past the data section of " +
                                           std::to_string(data_len));
    cursor = e.end;
  }
  if (cursor != data_len)
    fail(origin, std::to_string(data_len - cursor) + " trailing bytes belong to no tensor");
  const char* data = bytes.data() + 8 + header_len;
  for (const auto& e : entries) out.tensors.push_back(decode(origin, e, data));
  return out;
}

SafetensorsContents read_safetensors(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::invalid_argument(path.string() + ": is a directory; give a .safetensors file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::invalid_argument(path.string() + ": cannot open (" + std::strerror(errno) + ")");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw std::invalid_argument(path.string() + ": read error");
  return parse_safetensors(bytes, path.string());
}

namespace {
std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}
}  // namespace

std::string serialize_safetensors(const std::vector<NamedTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      header += json_string(k) + ":" + json_string(v);
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    uint64_t count = 1;
    for (int64_t d : t.shape) count *= static_cast<uint64_t>(d);
    if (count != t.values.size())
      throw std::logic_error("tensor '" + t.name + "' shape does not match its value count");
    if (i || !metadata.empty()) header += ',';
    header += json_string(t.name) + ":{\"dtype\":\"F32\",\"shape\":[";
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      if (d) header += ',';
      header += std::to_string(t.shape[d]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + 4 * count) + "]}";
    offset += 4 * count;
  }
  header += "}";
  // Pad with spaces so the data section starts 8-byte aligned, as the format recommends.
  while ((header.size() % 8) != 0) header += ' ';
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  out += header;
  out.reserve(out.size() + offset);
  for (const auto& t : tensors) out.append(reinterpret_cast<const char*>(t.values.data()), 4 * t.values.size());
  return out;
}

namespace {

// Removes "<name>.tmp-<pid>" files next to `path` left by a process that died mid-save (its pid is
// no longer running). Temporaries of live processes, including another remat saving to the same
// target right now, are left alone; a reused pid only means a stale file is kept a while longer.
void remove_stale_temporaries(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const std::string prefix = path.filename().string() + ".tmp-";
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid == ::getpid() || pid <= 0) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) fs::remove(it->path(), ec);
  }
}

// Test-only: REMAT_TEST_CRASH_IN_SAVE=1 makes a save end the process (_exit(99)) after writing
// half of the temporary file, so tests can check that an interrupted save loses nothing.
bool crash_in_save_requested() {
  const char* v = std::getenv("REMAT_TEST_CRASH_IN_SAVE");
  return v && std::string_view(v) == "1";
}

}  // namespace

void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // The reader refuses non-finite values, so writing one would only make a file that cannot be
  // loaded in place of one that can.
  for (const auto& t : tensors)
    for (std::size_t i = 0; i < t.values.size(); ++i)
      if (!std::isfinite(t.values[i]))
        throw std::runtime_error(path.string() + ": tensor '" + t.name +
                                 "' has a non-finite value at element " + std::to_string(i) +
                                 "; nothing written, the previous file is kept");
  const std::string bytes = serialize_safetensors(tensors, metadata);
  remove_stale_temporaries(path);
  const std::string tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::invalid_argument(path.string() + ": cannot create (" + std::strerror(errno) + ")");
  const bool crash = crash_in_save_requested();
  const std::size_t stop = crash ? bytes.size() / 2 : bytes.size();
  std::size_t done = 0;
  while (done < stop) {
    const ssize_t w = ::write(fd, bytes.data() + done, stop - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error(path.string() + ": write failed (" + why + "); previous file kept");
    }
    done += static_cast<std::size_t>(w);
  }
  if (crash) ::_exit(99);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(path.string() + ": fsync failed; previous file kept");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error(path.string() + ": rename failed (" + why + ")");
  }
  // Persist the rename itself.
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace remat
