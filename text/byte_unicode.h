// GPT-2's reversible map between bytes and printable Unicode characters. Byte-level BPE files
// (encoder.json, vocab.bpe, vocab.json, merges.txt, tokenizer.json) spell every token as the
// characters its bytes map to, so that no token contains whitespace or control characters:
// printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves, the other 68 bytes to
// U+0100 onwards in byte order (space becomes 'Ġ', newline 'Ċ').
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace remat::text {

// The character byte `b` is written as.
char32_t byte_to_unicode(uint8_t b);

// `bytes` spelled as mapped characters, UTF-8 encoded.
std::string bytes_to_unicode_text(std::string_view bytes);

// The inverse: the bytes a mapped spelling stands for, or nullopt when `text` is not valid UTF-8
// or holds a character outside the map.
std::optional<std::string> unicode_text_to_bytes(std::string_view text);

// The length of the valid UTF-8 character at `text[i]` (i < text.size()), its code point in `c`;
// 0 where the bytes there are not one (RFC 3629, as is_valid_utf8).
std::size_t decode_utf8(std::string_view text, std::size_t i, char32_t& c);

// True when `text` is valid UTF-8 (RFC 3629: no overlong forms, surrogates or code points past
// U+10FFFF).
bool is_valid_utf8(std::string_view text);

// Appends the UTF-8 encoding of `c` (which must be a Unicode scalar value).
void append_utf8(std::string& out, char32_t c);

}  // namespace remat::text
