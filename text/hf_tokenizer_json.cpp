#include "text/hf_tokenizer_json.h"

#include <cctype>
#include <cstdint>

#include "text/hf_pipeline_json.h"
#include "text/vocab_files.h"

namespace remat::text {

namespace {

namespace fs = std::filesystem;
using Type = JsonValue::Type;

bool flag(const JsonValue& v, const std::string& key, bool fallback) {
  const JsonValue* f = v.find(key);
  return f && f->type == Type::boolean ? f->boolean : fallback;
}

void check_model(const fs::path& file, const JsonValue& model, bool byte_level) {
  const JsonValue* type = model.find("type");
  if (type && type->type == Type::string && type->string != "BPE")
    fail_file(file, "model " + type->string + " is not supported (only BPE)");
  const JsonValue* dropout = model.find("dropout");
  if (dropout && dropout->type == Type::number && dropout->number != 0)
    fail_file(file, "BPE dropout is not supported");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const JsonValue* a = model.find(affix);
    if (a && a->type == Type::string && !a->string.empty())
      fail_file(file, std::string("BPE ") + affix + " '" + a->string + "' is not supported");
  }
  if (byte_level && flag(model, "byte_fallback", false))
    fail_file(file, "BPE byte_fallback with a ByteLevel pre_tokenizer is not supported");
}

// Character-level BPE's options (text/bpe_symbols.h).
BpeOptions character_options(const JsonValue& model) {
  BpeOptions o;
  o.characters = true;
  o.byte_fallback = flag(model, "byte_fallback", false);
  o.fuse_unk = flag(model, "fuse_unk", false);
  if (const JsonValue* unk = model.find("unk_token"); unk && unk->type == Type::string)
    o.unk_token = unk->string;
  return o;
}

// A character-level vocabulary: tokens as written, added tokens included (they are the same text
// either way).
Vocab read_literal_vocab(const fs::path& file, const JsonValue& object) {
  if (object.type != Type::object)
    fail_file(file, "the vocabulary must be a JSON object of token: id");
  Vocab vocab;
  vocab.reserve(object.object.size());
  for (const auto& [text, id] : object.object)
    vocab.emplace_back(text, token_id(file, id, "token '" + text + "'"));
  return vocab;
}

// One merge "a b" of a character-level vocabulary, whose tokens hold no space.
std::pair<std::string, std::string> split_literal_merge(const fs::path& file,
                                                        const std::string& line,
                                                        std::size_t number) {
  const std::size_t space = line.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
      line.find(' ', space + 1) != std::string::npos)
    fail_file(file, "merge " + std::to_string(number) + " '" + line +
                        "' is not two tokens separated by one space");
  return {line.substr(0, space), line.substr(space + 1)};
}

// Added tokens marked "normalized" (by default those that are not special) are matched in the
// normalized text, as Hugging Face matches them, the others in the text as given. Hugging Face
// matches the normalized form of a normalized token's text: one that the normalizer changes is
// refused.
std::vector<SpecialToken> read_added_tokens(const fs::path& file, const JsonValue& root,
                                            const Normalizer& normalizer) {
  std::vector<SpecialToken> added;
  const JsonValue* list = root.find("added_tokens");
  if (!list || list->type == Type::null) return added;
  if (list->type != Type::array) fail_file(file, "added_tokens must be a list");
  for (const JsonValue& t : list->array) {
    const JsonValue* content = t.find("content");
    const JsonValue* id = t.find("id");
    if (!content || content->type != Type::string || content->string.empty() || !id)
      fail_file(file, "an added token needs a non-empty content and an id");
    for (const char* option : {"lstrip", "rstrip", "single_word"})
      if (flag(t, option, false))
        fail_file(file, "added token '" + content->string + "' with " + option +
                            " true is not supported");
    std::string normalized, scratch;
    normalizer.apply(content->string, normalized, scratch);
    const bool after = flag(t, "normalized", !flag(t, "special", false)) && !normalizer.empty();
    if (after && normalized != content->string)
      fail_file(file, "added token '" + content->string +
                          "' with normalized true, which the normalizer changes to '" + normalized +
                          "', is not supported");
    added.push_back({content->string, token_id(file, *id, "added token '" + content->string + "'"),
                     false, after});
  }
  return added;
}

Merges read_merges(const fs::path& file, const JsonValue& model, bool byte_level) {
  const JsonValue* list = model.find("merges");
  if (!list || list->type != Type::array) fail_file(file, "model.merges must be a list");
  Merges merges;
  merges.reserve(list->array.size());
  for (const JsonValue& m : list->array) {
    const std::size_t number = merges.size() + 1;
    if (m.type == Type::string) {
      merges.push_back(byte_level ? split_merge(file, m.string, number)
                                  : split_literal_merge(file, m.string, number));
    } else if (m.type == Type::array && m.array.size() == 2 && m.array[0].type == Type::string &&
               m.array[1].type == Type::string) {
      if (byte_level)
        merges.emplace_back(token_bytes(file, m.array[0].string),
                            token_bytes(file, m.array[1].string));
      else
        merges.emplace_back(m.array[0].string, m.array[1].string);
    } else {
      fail_file(file, "merge " + std::to_string(number) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return merges;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_json(const fs::path& file) {
  const JsonValue root = read_json(file);
  if (root.type != Type::object) fail_file(file, "not a tokenizer.json (not a JSON object)");
  const JsonValue* model = root.find("model");
  if (!model || model->type != Type::object) fail_file(file, "not a tokenizer.json (no model)");
  Normalizer normalizer = read_hf_normalizer(file, root);
  bool byte_level = false;
  auto pre = read_hf_pre_tokenizer(file, root, byte_level);
  check_model(file, *model, byte_level);
  auto decoder = read_hf_decoder(file, root, byte_level);
  auto added = read_added_tokens(file, root, normalizer);
  const JsonValue* vocab = model->find("vocab");
  if (!vocab) fail_file(file, "model.vocab is missing");
  try {
    auto tokenizer = std::make_unique<Tokenizer>(
        byte_level ? read_vocab(file, *vocab, added) : read_literal_vocab(file, *vocab),
        read_merges(file, *model, byte_level), std::move(pre), added,
        byte_level ? BpeOptions() : character_options(*model));
    tokenizer->bpe().set_ignore_merges(flag(*model, "ignore_merges", false));
    tokenizer->set_normalizer(std::move(normalizer));
    tokenizer->set_decoder(std::move(decoder));
    tokenizer->set_post_processor(PostProcessor(root.find("post_processor"), file.string()));
    return tokenizer;
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    if (what.rfind(file.string(), 0) == 0) throw;
    fail_file(file, what);
  }
}

}  // namespace remat::text
