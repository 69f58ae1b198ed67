// Reading files with errors that name them: a small file whole (vocabularies, templates, token
// files), or exact byte ranges of an open one (the streamed tensor readers of formats/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace remat {

// The bytes of `path`. std::invalid_argument "<path>: is a folder, not a file" or
// "<path>: cannot read (missing or no permission)".
std::string read_whole_file(const std::filesystem::path& path);

// Exactly `bytes` at `offset` of `fd` (pread, retried on EINTR). std::invalid_argument
// "<origin>: read error (...)" or "<origin>: the file ended early; ..." when the file got shorter.
void read_file_at(int fd, uint64_t offset, void* out, std::size_t bytes, const std::string& origin);

}  // namespace remat
