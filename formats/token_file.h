// Token files as llm.c writes and reads them: a header of 256 little-endian int32 (magic,
// version, token count, the rest zero), then the tokens. Vocabularies of at most 65536 ids use
// llm.c's GPT-2 layout (magic 20240520, version 1, uint16 tokens); larger ones its Llama 3 layout
// (magic 20240801, version 7, uint32 tokens).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace remat {

inline constexpr int32_t kTokenFileMagicU16 = 20240520;
inline constexpr int32_t kTokenFileMagicU32 = 20240801;
inline constexpr std::size_t kTokenFileHeaderBytes = 256 * 4;

// Writes atomically (a crash leaves no half-written file). Throws std::invalid_argument when a
// token does not fit the layout `vocab_size` selects or the file cannot be written.
void write_token_file(const std::filesystem::path& path, const std::vector<uint32_t>& tokens,
                      std::size_t vocab_size);

// Throws std::invalid_argument naming the file: unreadable, bad magic or version, or a size that
// disagrees with the header's count.
std::vector<uint32_t> read_token_file(const std::filesystem::path& path);
std::vector<uint32_t> parse_token_file(std::string_view bytes, std::string_view origin);

// True when `bytes` starts with either magic number.
bool is_token_file(std::string_view bytes);

}  // namespace remat
