// The varied text the tokenizer is checked on against independent implementations: every file of
// /usr/share/common-licenses, and generated strings for what licenses lack (every Unicode plane,
// whitespace runs, contractions, digits, emoji, CRLF, invalid UTF-8, special tokens, random bytes).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "text/byte_unicode.h"
#include "text/pre_tokenizer.h"

namespace remat::test {

struct CorpusText {
  std::string name;
  std::string bytes;
};

namespace corpus_detail {

inline std::string utf8(char32_t c) {
  std::string s;
  text::append_utf8(s, c);
  return s;
}

// True for code points PCRE2's Unicode tables leave unassigned. Outside planes 4-13 (never
// assigned) such code points may be letters to a reference built on a newer Unicode: a known
// difference (text/pre_tokenizer.h, unicode_version()), not one the comparison can settle.
inline bool unassigned_to_pcre2(char32_t c) {
  static text::Regex unassigned("^\\p{Cn}$");
  const std::string s = utf8(c);
  std::size_t begin = 0, end = 0;
  return unassigned.find(s, 0, begin, end);
}

// Code points drawn from each of the 17 planes (surrogates excluded), between ASCII words,
// digits and spaces so that every class boundary meets them.
inline std::string unicode_planes(std::mt19937& rng) {
  std::string out;
  for (char32_t plane = 0; plane <= 16; ++plane) {
    for (int k = 0; k < 400; ++k) {
      char32_t c = (plane << 16) | char32_t(rng() % 0x10000);
      if (plane == 0 && k % 2 == 0) c = char32_t(0x80 + rng() % 0x3000);  // the dense scripts
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      if ((plane < 4 || plane > 13) && unassigned_to_pcre2(c)) continue;
      static const char* const glue[] = {"", " ", "a", "1", "  ", ".", "\n", "x y", "'s"};
      out += glue[rng() % 9];
      out += utf8(c);
    }
  }
  return out;
}

inline std::string whitespace_runs(std::mt19937& rng) {
  static const char32_t kSpaces[] = {' ',    '\t',   '\n',   '\r',   0x0B,   0x0C,   0x85,   0xA0,
                                     0x1680, 0x180E, 0x2000, 0x2007, 0x200A, 0x200B, 0x2028, 0x2029,
                                     0x202F, 0x205F, 0x3000, 0xFEFF, 0x1C,   0x1F};
  static const char* const kWords[] = {"word", "42", "!", "é", "日本", "'t", "-"};
  std::string out;
  for (int k = 0; k < 3000; ++k) {
    const int run = int(rng() % 5);
    for (int i = 0; i < run; ++i) out += utf8(kSpaces[rng() % std::size(kSpaces)]);
    if (rng() % 3) out += kWords[rng() % std::size(kWords)];
  }
  return out;
}

inline std::string invalid_utf8(std::mt19937& rng) {
  static const char* const kBad[] = {"\x80",
                                     "\xBF",
                                     "\xC0\xAF",
                                     "\xC1\xBF",
                                     "\xE2\x82",
                                     "\xE2",
                                     "\xED\xA0\x80",
                                     "\xED\xBF\xBF",
                                     "\xF4\x90\x80\x80",
                                     "\xF5",
                                     "\xFF",
                                     "\xFE\xFE",
                                     "\xF0\x9F\x98",
                                     "\xE0\x80\xAF",
                                     "\xC3",
                                     "\xF8\x88\x80\x80\x80"};
  static const char* const kGood[] = {"a",    " ", "  ", "\n", "€",        "word",
                                      " the", "1", "😀",  "'s", "\xC3\xA9", "<|endoftext|>"};
  std::string out;
  for (int k = 0; k < 3000; ++k)
    out += rng() % 2 ? kBad[rng() % std::size(kBad)] : kGood[rng() % std::size(kGood)];
  return out;
}

inline std::string random_bytes(std::mt19937& rng, std::size_t n) {
  std::string out(n, '\0');
  for (char& c : out) c = char(rng() % 256);
  return out;
}

}  // namespace corpus_detail

inline std::vector<CorpusText> license_corpus() {
  std::vector<CorpusText> out;
  for (const auto& e : std::filesystem::directory_iterator("/usr/share/common-licenses")) {
    if (!e.is_regular_file()) continue;  // follows symlinks: GPL -> GPL-3 is read twice
    std::ifstream in(e.path(), std::ios::binary);
    out.push_back({e.path().filename().string(),
                   {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

inline std::vector<CorpusText> generated_corpus() {
  using namespace corpus_detail;
  std::mt19937 rng(20240520);
  std::vector<CorpusText> out;
  out.push_back({"unicode-planes", unicode_planes(rng)});
  out.push_back({"whitespace", whitespace_runs(rng)});
  out.push_back({"contractions",
                 "I'm you're he's she'd we've they'll it's don't can't WON'T I'M 'S 'll 'LL ''s "
                 "''' 's'd're rock'n'roll O'Neil’s y’all ' s '\n's \t'd"});
  out.push_back({"digits",
                 "0 12 345 6789 3.14159 1,000,000 1e-10 -42 +7 0x1F 2024-05-20 ٣٤٥ ²³ "
                 "①② ⅫⅢ 〇 12ab34 a1b2 𝟙𝟚 １２３"});
  out.push_back({"emoji",
                 "👍 👍🏽 👨‍👩‍👧‍👦 🇺🇸🇯🇵 ❤️ ☺︎ 🤖🤖🤖 a😀b 😀😀 😀 😀\n🏳️‍🌈 "
                 "#️⃣ "
                 "𓀀𓀁 🀄"});
  out.push_back({"crlf", "line one\r\nline two\r\n\r\n  indented\r\n\ttab\r\n\r\r\n\n\r end\r\n"});
  out.push_back({"special-tokens",
                 "<|endoftext|>start<|endoftext|><|endoftext|> middle <|endoftext|>\n<|endoftext|"
                 " <|endoftext |> <|endoftext|>end<|endoftext|>"});
  out.push_back({"invalid-utf8", invalid_utf8(rng)});
  out.push_back({"random-bytes", random_bytes(rng, 20000)});
  out.push_back({"empty", ""});
  out.push_back({"long-runs", std::string(5000, ' ') + "x" + std::string(3000, '\n') +
                                  std::string(4000, 'a') + std::string(2000, '!') + "\xFF"});
  return out;
}

inline std::vector<CorpusText> javascript_safe(const std::vector<CorpusText>& corpus) {
  std::vector<CorpusText> out;
  for (const auto& c : corpus) {
    if (c.bytes.find("\xC2\x85") != std::string::npos ||
        c.bytes.find("\xEF\xBB\xBF") != std::string::npos)
      continue;
    if (!text::is_valid_utf8(c.bytes)) continue;
    out.push_back(c);
  }
  return out;
}

}  // namespace remat::test
