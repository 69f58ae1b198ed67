#include "text/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <cstdint>
#include <stdexcept>

namespace remat::text {

namespace {

const icu::Normalizer2& nfc() {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status) || n == nullptr)
    throw std::runtime_error(std::string("ICU's NFC normalizer is unavailable: ") +
                             u_errorName(status));
  return *n;
}

// Normalizes one run of valid UTF-8; text already in NFC (almost all text) is copied as it is.
void append_valid_run(const icu::Normalizer2& n, std::string_view run, std::string& out) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::StringPiece piece(run.data(), static_cast<int32_t>(run.size()));
  if (n.isNormalizedUTF8(piece, status) && U_SUCCESS(status)) {
    out.append(run);
    return;
  }
  status = U_ZERO_ERROR;
  icu::StringByteSink<std::string> sink(&out);
  n.normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status))
    throw std::runtime_error(std::string("ICU's NFC normalization failed: ") + u_errorName(status));
}

}  // namespace

void append_nfc(std::string_view text, std::string& out) {
  const icu::Normalizer2& n = nfc();
  // ICU takes int32_t lengths: a valid run longer than max_run is cut before a code point that
  // starts a new normalization segment (hasBoundaryBefore), which normalizes as the whole would.
  const auto size = static_cast<int64_t>(text.size());
  int64_t run = 0, i = 0;
  const int64_t max_run = INT32_MAX / 4;
  while (i < size) {
    int64_t next = i;
    UChar32 c = 0;
    // U8_NEXT reads one code point, or a negative value for an ill-formed sequence (ICU's rules:
    // RFC 3629, no surrogates or overlong forms).
    const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
    U8_NEXT(bytes, next, size, c);
    if (c < 0) {
      append_valid_run(n, text.substr(std::size_t(run), std::size_t(i - run)), out);
      out.append(text.substr(std::size_t(i), std::size_t(next - i)));
      run = next;
    } else if (i - run >= max_run && n.hasBoundaryBefore(c)) {
      append_valid_run(n, text.substr(std::size_t(run), std::size_t(i - run)), out);
      run = i;
    }
    i = next;
  }
  append_valid_run(n, text.substr(std::size_t(run)), out);
}

std::string to_nfc(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_nfc(text, out);
  return out;
}

std::string normalizer_unicode_version() {
  UVersionInfo v;
  u_getUnicodeVersion(v);
  return std::to_string(v[0]) + "." + std::to_string(v[1]);
}

}  // namespace remat::text

namespace remat::text {

Normalizer Normalizer::nfc() {
  Normalizer n;
  n.add_nfc();
  return n;
}

void Normalizer::add_nfc() {
  steps_.push_back({Kind::nfc, "", ""});
}

void Normalizer::add_replace(std::string pattern, std::string content) {
  if (pattern.empty()) throw std::invalid_argument("a Replace pattern must not be empty");
  steps_.push_back({Kind::replace, std::move(pattern), std::move(content)});
}

void Normalizer::add_prepend(std::string prefix) {
  steps_.push_back({Kind::prepend, std::move(prefix), ""});
}

std::string Normalizer::describe() const {
  std::string out;
  for (const Step& s : steps_) {
    if (!out.empty()) out += ", ";
    out += s.kind == Kind::nfc       ? std::string("NFC")
           : s.kind == Kind::prepend ? "Prepend(" + s.a + ")"
                                     : "Replace(" + s.a + " -> " + s.b + ")";
  }
  return out;
}

void Normalizer::apply_step(const Step& step, std::string_view text, std::string& out) const {
  switch (step.kind) {
    case Kind::nfc:
      append_nfc(text, out);
      break;
    case Kind::prepend:
      if (!text.empty()) out += step.a;  // Hugging Face prepends to non-empty text only
      out += text;
      break;
    case Kind::replace:
      for (std::size_t at = 0;;) {
        const std::size_t hit = text.find(step.a, at);
        out += text.substr(at, hit - at);
        if (hit == std::string_view::npos) break;
        out += step.b;
        at = hit + step.a.size();
      }
      break;
  }
}

void Normalizer::apply(std::string_view text, std::string& out, std::string& scratch) const {
  if (steps_.size() == 1) {
    apply_step(steps_[0], text, out);
    return;
  }
  std::string current(text);
  for (const Step& step : steps_) {
    scratch.clear();
    apply_step(step, current, scratch);
    current.swap(scratch);
  }
  out += current;
}

}  // namespace remat::text
