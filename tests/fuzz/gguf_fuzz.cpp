// libFuzzer target for the GGUF reader: any byte string is either read or refused with
// std::invalid_argument; never a crash, a hang, an out-of-bounds read or an absurd allocation.
// A file that is read has every tensor's bytes read back through read() in pieces, every
// metadata getter tried on every key, and must survive a rewrite (gguf_header_bytes and the data
// padded as the writer pads it) unchanged: metadata, tensor names, types, dimensions and bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"

namespace {

// Every getter on every key: each returns a value or refuses with std::invalid_argument.
void touch_metadata(const remat::GgufMetadata& md) {
  for (const auto& e : md.entries()) {
    const auto try_get = [&](auto get) {
      try {
        get();
      } catch (const std::invalid_argument&) {
      }
    };
    try_get([&] { return md.string(e.key); });
    try_get([&] { return md.uint(e.key); });
    try_get([&] { return md.integer(e.key); });
    try_get([&] { return md.number(e.key); });
    try_get([&] { return md.boolean(e.key); });
    try_get([&] { return md.strings(e.key); });
    try_get([&] { return md.floats(e.key); });
    try_get([&] { return md.int32s(e.key); });
    if (md.find(e.key) != &e.value) std::abort();
  }
}

std::string tensor_bytes(const remat::GgufFile& f, const remat::GgufTensor& t) {
  std::string out(t.bytes, '\0');
  constexpr uint64_t kPiece = 4093;  // odd pieces, across block boundaries
  for (uint64_t at = 0; at < t.bytes; at += kPiece) {
    const auto n = static_cast<std::size_t>(std::min(kPiece, t.bytes - at));
    f.read(t, at, std::as_writable_bytes(std::span(out.data() + at, n)));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  std::optional<remat::GgufFile> file;
  try {
    file.emplace(remat::GgufFile::view(bytes, "fuzz"));
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const remat::GgufFile& f = *file;
  touch_metadata(f.metadata());
  try {
    f.check_supported();
  } catch (const std::invalid_argument&) {
  }
  std::vector<remat::GgufTensorSpec> specs;
  std::vector<std::string> contents;
  for (const remat::GgufTensor& t : f.tensors()) {
    if (f.tensor(t.name) != &t) std::abort();
    specs.push_back({t.name, t.type, t.ne});
    contents.push_back(tensor_bytes(f, t));
  }
  // A file with no tensors may ask for an alignment of up to 2^31 bytes without holding the
  // padding; its rewrite would be that large, so it is not rewritten.
  const uint64_t alignment = f.parts()[0].alignment;
  if (alignment > (64u << 10)) return 0;
  std::string again = remat::gguf_header_bytes(f.metadata(), specs, "fuzz rewrite");
  for (const std::string& c : contents) {
    again += c;
    again.append((alignment - c.size() % alignment) % alignment, '\0');
  }
  const remat::GgufFile back = remat::GgufFile::view(
      std::as_bytes(std::span(again.data(), again.size())), "fuzz round trip");
  if (!(back.metadata() == f.metadata()) || back.tensors().size() != f.tensors().size())
    std::abort();
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const remat::GgufTensor& b = back.tensors()[i];
    if (b.name != specs[i].name || b.type != specs[i].type || b.ne != specs[i].ne ||
        tensor_bytes(back, b) != contents[i])
      std::abort();
  }
  return 0;
}
