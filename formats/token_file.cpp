#include "formats/token_file.h"

#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

#include "base/atomic_file.h"
#include "base/whole_file.h"

namespace remat {

namespace {

// llm.c writes its files on little-endian machines; so does remat (x86, ARM).
static_assert(std::endian::native == std::endian::little, "token files are little-endian");

int32_t header_field(std::string_view bytes, std::size_t index) {
  int32_t v = 0;
  std::memcpy(&v, bytes.data() + 4 * index, 4);
  return v;
}

}  // namespace

bool is_token_file(std::string_view bytes) {
  if (bytes.size() < 4) return false;
  const int32_t magic = header_field(bytes, 0);
  return magic == kTokenFileMagicU16 || magic == kTokenFileMagicU32;
}

void write_token_file(const std::filesystem::path& path, const std::vector<uint32_t>& tokens,
                      std::size_t vocab_size) {
  const bool wide = vocab_size > 65536;
  if (tokens.size() > std::size_t(INT32_MAX))
    throw std::invalid_argument(path.string() + ": " + std::to_string(tokens.size()) +
                                " tokens do not fit a token file's int32 count");
  int32_t header[256] = {};
  header[0] = wide ? kTokenFileMagicU32 : kTokenFileMagicU16;
  header[1] = wide ? 7 : 1;
  header[2] = int32_t(tokens.size());
  std::string body(tokens.size() * (wide ? 4 : 2), '\0');
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!wide && tokens[i] > 0xFFFF)
      throw std::invalid_argument(path.string() + ": token " + std::to_string(i) + " is id " +
                                  std::to_string(tokens[i]) + ", over the uint16 layout's 65535");
    if (wide) {
      std::memcpy(body.data() + 4 * i, &tokens[i], 4);
    } else {
      const uint16_t t = uint16_t(tokens[i]);
      std::memcpy(body.data() + 2 * i, &t, 2);
    }
  }
  AtomicFile out(path);
  out.write(header, sizeof header);
  out.write(body.data(), body.size());
  out.commit();
}

std::vector<uint32_t> parse_token_file(std::string_view bytes, std::string_view origin) {
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(std::string(origin) + ": " + what);
  };
  if (bytes.size() < kTokenFileHeaderBytes)
    fail("too short for a token file's 1024-byte header (" + std::to_string(bytes.size()) +
         " bytes)");
  const int32_t magic = header_field(bytes, 0), version = header_field(bytes, 1);
  const int64_t count = header_field(bytes, 2);
  const bool narrow = magic == kTokenFileMagicU16 && version == 1;
  const bool wide = magic == kTokenFileMagicU32 && version == 7;
  if (!narrow && !wide)
    fail("not an llm.c token file (magic " + std::to_string(magic) + ", version " +
         std::to_string(version) + "; expected 20240520 v1 or 20240801 v7)");
  const std::size_t width = narrow ? 2 : 4;
  if (count < 0 || bytes.size() - kTokenFileHeaderBytes != std::size_t(count) * width)
    fail("the header says " + std::to_string(count) + " tokens but the file holds " +
         std::to_string(bytes.size() - kTokenFileHeaderBytes) + " bytes of " +
         std::to_string(width) + "-byte tokens");
  std::vector<uint32_t> tokens(static_cast<std::size_t>(count));
  const char* data = bytes.data() + kTokenFileHeaderBytes;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (narrow) {
      uint16_t t = 0;
      std::memcpy(&t, data + 2 * i, 2);
      tokens[i] = t;
    } else {
      std::memcpy(&tokens[i], data + 4 * i, 4);
    }
  }
  return tokens;
}

std::vector<uint32_t> read_token_file(const std::filesystem::path& path) {
  return parse_token_file(read_whole_file(path), path.string());
}

}  // namespace remat
