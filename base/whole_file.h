// Reading files with errors that name them: a small file whole (vocabularies, templates, token
// files), or exact byte ranges of an open one (the streamed tensor readers of formats/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace remat {

// How much read_whole_file reads of a file whose size stat() gives as 0 (/proc files and other
// generated ones) before refusing it: such files are read to their end, not trusted to end.
inline constexpr uint64_t kUnsizedFileLimit = uint64_t{64} << 20;

// The bytes of `path`, a regular file (base/regular_file.h refuses folders, devices, FIFOs and
// sockets first, in one line naming the path). A file with a size is read up to that size; one
// whose size reads as 0 is read to its end, at most `unsized_limit` bytes, else
// std::invalid_argument "<path>: its size reads as 0 but it holds more than <limit> bytes ...".
// Other errors: "<path>: cannot open (<reason>)", "<path>: read error (<reason>)".
std::string read_whole_file(const std::filesystem::path& path,
                            uint64_t unsized_limit = kUnsizedFileLimit);

// Exactly `bytes` at `offset` of `fd` (pread, retried on EINTR). std::invalid_argument
// "<origin>: read error (...)" or "<origin>: the file ended early; ..." when the file got shorter.
void read_file_at(int fd, uint64_t offset, void* out, std::size_t bytes, const std::string& origin);

}  // namespace remat
