#include "text/decoder.h"

#include <stdexcept>

#include "text/byte_unicode.h"

namespace remat::text {

namespace {

void require_character(const std::string& c, const char* what) {
  char32_t code = 0;
  if (c.empty() || decode_utf8(c, 0, code) != c.size())
    throw std::invalid_argument(std::string(what) + " '" + c + "' is not one UTF-8 character");
}

std::string replaced(const std::string& token, const std::string& pattern,
                     const std::string& content) {
  std::string out;
  for (std::size_t at = 0;;) {
    const std::size_t hit = token.find(pattern, at);
    out.append(token, at, hit == std::string::npos ? std::string::npos : hit - at);
    if (hit == std::string::npos) return out;
    out += content;
    at = hit + pattern.size();
  }
}

// The byte "<0xAB>" spells, or -1 (Hugging Face reads any two hex digits, either case).
int byte_token(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  const auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  const int hi = hex(token[3]), lo = hex(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::vector<std::string> byte_fallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string bytes;
  bool in_run = false;
  for (std::string& t : tokens) {
    const int b = byte_token(t);
    if (b >= 0) {
      bytes += char(b);
      in_run = true;
      continue;
    }
    if (in_run) out.push_back(std::move(bytes));
    bytes.clear();
    in_run = false;
    out.push_back(std::move(t));
  }
  if (in_run) out.push_back(std::move(bytes));
  return out;
}

// Cuts up to `start` leading and `stop` trailing copies of the character `c`.
std::string stripped(const std::string& token, const std::string& c, std::size_t start,
                     std::size_t stop) {
  std::size_t begin = 0, end = token.size();
  for (std::size_t i = 0; i < start && token.compare(begin, c.size(), c) == 0; ++i)
    begin += c.size();
  for (std::size_t i = 0;
       i < stop && end - begin >= c.size() && token.compare(end - c.size(), c.size(), c) == 0; ++i)
    end -= c.size();
  return token.substr(begin, end - begin);
}

}  // namespace

void Decoder::add_replace(std::string pattern, std::string content) {
  if (pattern.empty()) throw std::invalid_argument("a Replace pattern must not be empty");
  steps_.push_back({Kind::replace, std::move(pattern), std::move(content)});
}

void Decoder::add_byte_fallback() {
  steps_.push_back({Kind::byte_fallback, "", ""});
}

void Decoder::add_fuse() {
  steps_.push_back({Kind::fuse, "", ""});
}

void Decoder::add_strip(std::string content, std::size_t start, std::size_t stop) {
  require_character(content, "Strip content");
  steps_.push_back({Kind::strip, std::move(content), "", start, stop});
}

void Decoder::add_metaspace(std::string replacement, bool drop_in_first) {
  require_character(replacement, "Metaspace replacement");
  steps_.push_back({Kind::metaspace, std::move(replacement), "", 0, 0, drop_in_first});
}

void Decoder::apply(const Step& step, std::vector<std::string>& tokens) {
  switch (step.kind) {
    case Kind::replace:
      for (auto& t : tokens) t = replaced(t, step.a, step.b);
      break;
    case Kind::byte_fallback:
      tokens = byte_fallback(tokens);
      break;
    case Kind::fuse: {
      std::string all;
      for (const auto& t : tokens) all += t;
      tokens.assign(1, std::move(all));
      break;
    }
    case Kind::strip:
      for (auto& t : tokens) t = stripped(t, step.a, step.start, step.stop);
      break;
    case Kind::metaspace:
      for (std::size_t i = 0; i < tokens.size(); ++i)
        tokens[i] = replaced(tokens[i], step.a, i == 0 && step.drop_in_first ? "" : " ");
      break;
  }
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  for (const Step& step : steps_) apply(step, tokens);
  std::string out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0 && join_with_spaces_) out += ' ';
    out += tokens[i];
  }
  return out;
}

}  // namespace remat::text
