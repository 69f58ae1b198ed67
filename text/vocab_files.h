// The pieces every byte-level BPE file format shares: reading a file or JSON with errors that
// name it, vocabularies of {"token": id} spelled through GPT-2's byte map, and merge lines "a b".
// Every error is one std::invalid_argument line starting with the file's path.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json.h"
#include "text/tokenizer.h"

namespace remat::text {

using Vocab = std::vector<std::pair<std::string, TokenId>>;
using Merges = std::vector<std::pair<std::string, std::string>>;

[[noreturn]] void fail_file(const std::filesystem::path& file, const std::string& what);
std::string read_file(const std::filesystem::path& path);
JsonValue read_json(const std::filesystem::path& path);

// A token spelled with GPT-2's byte-to-character map, as bytes.
std::string token_bytes(const std::filesystem::path& file, const std::string& spelled);
// A JSON number that is a token id; `what` names it in the error.
TokenId token_id(const std::filesystem::path& file, const JsonValue& v, const std::string& what);

// {"token": id, ...}; tokens in `added` are skipped (they are matched in text and decode as
// written, not through the byte map).
Vocab read_vocab(const std::filesystem::path& file, const JsonValue& object,
                 const std::vector<SpecialToken>& added);

// One merge "a b" (numbered from 1 in errors).
std::pair<std::string, std::string> split_merge(const std::filesystem::path& file,
                                                std::string_view line, std::size_t number);
// vocab.bpe / merges.txt: an optional "#version" first line, then one merge per line.
Merges read_merges_text(const std::filesystem::path& file);

}  // namespace remat::text
