// One GGUF file's header parsed and validated (formats/gguf_parse.cpp lists every rule): internal
// to formats/gguf*.cpp, which put the parts of a model together (formats/gguf.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "formats/gguf.h"

namespace remat {

struct GgufParsedPart {
  GgufPart part;
  GgufMetadata metadata;
  std::vector<GgufTensor> tensors;  // offsets absolute; part 0
  int fd = -1;                      // the file, when parsed from one
};

// std::invalid_argument "<origin>: <what is wrong>" for a damaged file.
GgufParsedPart parse_gguf(std::span<const std::byte> bytes, const std::string& origin);
// Reads the header of the `file_bytes` long file open as `fd` (which stays open, the caller's).
GgufParsedPart parse_gguf(int fd, uint64_t file_bytes, const std::string& origin);

// Reads exactly `bytes` at `offset` of `fd`; std::invalid_argument when the file ends first.
void gguf_read_at(int fd, uint64_t offset, void* out, std::size_t bytes, const std::string& origin);

}  // namespace remat
