#include "text/decoder.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "text/byte_unicode.h"

namespace remat::text {

namespace {

void require_character(const std::string& c, const char* what) {
  char32_t code = 0;
  if (c.empty() || decode_utf8(c, 0, code) != c.size())
    throw std::invalid_argument(std::string(what) + " '" + c + "' is not one UTF-8 character");
}

using Marks = std::vector<std::pair<std::size_t, std::size_t>>;

std::string replaced(std::string_view token, const std::string& pattern,
                     const std::string& content) {
  std::string out;
  for (std::size_t at = 0;;) {
    const std::size_t hit = token.find(pattern, at);
    out.append(token.substr(at, hit == std::string_view::npos ? hit : hit - at));
    if (hit == std::string_view::npos) return out;
    out += content;
    at = hit + pattern.size();
  }
}

// `text` with `pattern` replaced between marks (each token's part on its own), marks moved.
void replace_marked(std::string& text, Marks& marks, const std::string& pattern,
                    const std::string& content) {
  std::string out;
  for (std::size_t k = 0; k < marks.size(); ++k) {
    const std::size_t begin = marks[k].first;
    const std::size_t end = k + 1 < marks.size() ? marks[k + 1].first : text.size();
    marks[k].first = out.size();
    out += replaced(std::string_view(text).substr(begin, end - begin), pattern, content);
  }
  text = std::move(out);
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

// Appends `from` to `to`, its marks moved past what `to` held.
template <class Piece>
void join(Piece& to, Piece&& from, const std::string& separator = "") {
  if (!to.text.empty() || !to.marks.empty()) to.text += separator;
  for (auto& [offset, index] : from.marks) to.marks.emplace_back(to.text.size() + offset, index);
  to.text += from.text;
}

// Runs of byte tokens become one piece holding their bytes.
template <class Piece>
std::vector<Piece> byte_fallback(std::vector<Piece>& pieces) {
  std::vector<Piece> out;
  bool in_run = false;
  for (Piece& p : pieces) {
    const int b = byte_token(p.text);
    if (b < 0) {
      out.push_back(std::move(p));
      in_run = false;
      continue;
    }
    p.text = std::string(1, char(b));
    if (in_run)
      join(out.back(), std::move(p));
    else
      out.push_back(std::move(p));
    in_run = true;
  }
  return out;
}

// Cuts up to `start` leading and `stop` trailing copies of the character `c`; marks stay within.
void strip(std::string& text, Marks& marks, const std::string& c, std::size_t start,
           std::size_t stop) {
  std::size_t begin = 0, end = text.size();
  for (std::size_t i = 0; i < start && text.compare(begin, c.size(), c) == 0; ++i)
    begin += c.size();
  for (std::size_t i = 0;
       i < stop && end - begin >= c.size() && text.compare(end - c.size(), c.size(), c) == 0; ++i)
    end -= c.size();
  for (auto& m : marks) m.first = std::min(std::max(m.first, begin), end) - begin;
  text = text.substr(begin, end - begin);
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

void Decoder::apply(const Step& step, std::vector<Piece>& pieces) {
  switch (step.kind) {
    case Kind::replace:
      for (auto& p : pieces) replace_marked(p.text, p.marks, step.a, step.b);
      break;
    case Kind::byte_fallback:
      pieces = byte_fallback(pieces);
      break;
    case Kind::fuse: {
      Piece all;
      for (auto& p : pieces) join(all, std::move(p));
      pieces.assign(1, std::move(all));
      break;
    }
    case Kind::strip:
      for (auto& p : pieces) strip(p.text, p.marks, step.a, step.start, step.stop);
      break;
    case Kind::metaspace:
      for (std::size_t i = 0; i < pieces.size(); ++i)
        replace_marked(pieces[i].text, pieces[i].marks, step.a,
                       i == 0 && step.drop_in_first ? "" : " ");
      break;
  }
}

std::string Decoder::decode(std::vector<std::string> tokens,
                            std::vector<std::size_t>* starts) const {
  std::vector<Piece> pieces(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) pieces[i] = {std::move(tokens[i]), {{0, i}}};
  for (const Step& step : steps_) apply(step, pieces);
  Piece all;
  for (auto& p : pieces) join(all, std::move(p), join_with_spaces_ ? " " : "");
  if (starts) {
    starts->assign(tokens.size(), 0);
    for (const auto& [offset, index] : all.marks) (*starts)[index] = offset;
  }
  return all.text;
}

}  // namespace remat::text
