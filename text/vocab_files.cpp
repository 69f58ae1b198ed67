#include "text/vocab_files.h"

#include <fstream>
#include <sstream>

#include "base/whole_file.h"
#include "text/byte_unicode.h"

namespace remat::text {

namespace fs = std::filesystem;

[[noreturn]] void fail_file(const fs::path& file, const std::string& what) {
  throw std::invalid_argument(file.string() + ": " + what);
}

std::string read_file(const fs::path& path) {
  return read_whole_file(path);
}

JsonValue read_json(const fs::path& path) {
  try {
    return parse_json(read_file(path));
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    if (what.rfind(path.string(), 0) == 0) throw;
    fail_file(path, std::string("not valid JSON: ") + e.what());
  }
}

// Token spelled with GPT-2's byte-to-character map, as bytes. Tokens in `verbatim` (added tokens)
// are taken as written.
std::string token_bytes(const fs::path& file, const std::string& spelled) {
  auto bytes = unicode_text_to_bytes(spelled);
  if (!bytes)
    fail_file(file, "token '" + spelled + "' is not byte-level BPE text (not in GPT-2's byte map)");
  return *bytes;
}

TokenId token_id(const fs::path& file, const JsonValue& v, const std::string& what) {
  if (v.type != JsonValue::Type::number || v.number < 0 || v.number > 2147483647.0 ||
      v.number != double(int64_t(v.number)))
    fail_file(file, what + " must be a non-negative integer id");
  return TokenId(v.number);
}

// vocab.json / encoder.json, or tokenizer.json's model.vocab: {"token": id, ...}.
Vocab read_vocab(const fs::path& file, const JsonValue& object,
                 const std::vector<SpecialToken>& added) {
  if (object.type != JsonValue::Type::object)
    fail_file(file, "the vocabulary must be a JSON object of token: id");
  Vocab vocab;
  vocab.reserve(object.object.size());
  for (const auto& [spelled, id] : object.object) {
    bool is_added = false;
    for (const auto& a : added) is_added = is_added || a.text == spelled;
    if (is_added) continue;  // added tokens are matched in text and decode as written
    vocab.emplace_back(token_bytes(file, spelled), token_id(file, id, "token '" + spelled + "'"));
  }
  return vocab;
}

std::pair<std::string, std::string> split_merge(const fs::path& file, std::string_view line,
                                                std::size_t number) {
  const std::size_t space = line.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
      line.find(' ', space + 1) != std::string_view::npos)
    fail_file(file, "merge " + std::to_string(number) + " '" + std::string(line) +
                        "' is not two tokens separated by one space");
  return {token_bytes(file, std::string(line.substr(0, space))),
          token_bytes(file, std::string(line.substr(space + 1)))};
}

// vocab.bpe / merges.txt: an optional "#version" line, then "a b" per line.
Merges read_merges_text(const fs::path& file) {
  const std::string text = read_file(file);
  Merges merges;
  std::size_t number = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    at = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (merges.empty() && line.rfind("#version", 0) == 0)) continue;
    merges.push_back(split_merge(file, line, ++number));
  }
  return merges;
}

}  // namespace remat::text
