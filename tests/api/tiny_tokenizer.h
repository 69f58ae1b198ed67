// A tiny byte-level BPE tokenizer written as Hugging Face's vocab.json + merges.txt: the 256
// bytes (id = byte value), three merges and <|endoftext|>, 261 ids in all. The API tests and the C
// sample test use it so that they never depend on downloaded files.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace remat::test {

// GPT-2's printable stand-in for byte b, UTF-8 encoded: printable Latin-1 bytes stand for
// themselves, the others for 256, 257, ... in byte order (so that no byte is whitespace or a
// control character in the vocabulary files).
inline std::string byte_symbol(int b) {
  static const auto printable = [](int c) {
    return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
  };
  int code = b;
  if (!printable(b)) {
    code = 256;
    for (int c = 0; c < b; ++c) code += printable(c) ? 0 : 1;
  }
  std::string utf8;
  if (code < 0x80) {
    utf8 += char(code);
  } else {
    utf8 += char(0xC0 | (code >> 6));
    utf8 += char(0x80 | (code & 0x3F));
  }
  return utf8;
}

// Writes vocab.json and merges.txt into `dir` (created). Ids: bytes 0..255, "he" 256, "ll" 257,
// "hell" 258, "\u0120h" (space h) 259, "<|endoftext|>" 260.
inline void write_tiny_tokenizer(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b) {
    std::string s = byte_symbol(b);
    if (s == "\"" || s == "\\") s = "\\" + s;
    vocab += "\"" + s + "\": " + std::to_string(b) + ", ";
  }
  const std::string space = byte_symbol(' ');
  vocab +=
      "\"he\": 256, \"ll\": 257, \"hell\": 258, \"" + space + "h\": 259, \"<|endoftext|>\": 260}";
  std::ofstream(dir / "vocab.json", std::ios::binary) << vocab;
  std::ofstream(dir / "merges.txt", std::ios::binary)
      << "#version: 0.2\nh e\nl l\nhe ll\n" + space + " h\n";
}

}  // namespace remat::test
