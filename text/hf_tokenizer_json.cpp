#include "text/hf_tokenizer_json.h"

#include <cctype>
#include <cstdint>

#include "text/vocab_files.h"

namespace remat::text {

namespace {

namespace fs = std::filesystem;
using Type = JsonValue::Type;

std::string type_of(const JsonValue& v) {
  const JsonValue* t = v.find("type");
  return t && t->type == Type::string ? t->string : "(no type)";
}

bool flag(const JsonValue& v, const std::string& key, bool fallback) {
  const JsonValue* f = v.find(key);
  return f && f->type == Type::boolean ? f->boolean : fallback;
}

bool null_or_absent(const JsonValue& v, const std::string& key) {
  const JsonValue* f = v.find(key);
  return !f || f->type == Type::null;
}

// No normalizer, or NFC (Qwen3's); any other is refused by type.
Normalization read_normalizer(const fs::path& file, const JsonValue& root) {
  if (null_or_absent(root, "normalizer")) return Normalization::none;
  const std::string type = type_of(*root.find("normalizer"));
  if (type != "NFC") fail_file(file, "normalizer " + type + " is not supported (only NFC)");
  return Normalization::nfc;
}

// Hugging Face's Split pattern: {"Regex": "..."} or {"String": "..."} (a literal).
std::string split_pattern(const fs::path& file, const JsonValue& split) {
  const JsonValue* p = split.find("pattern");
  const JsonValue* regex = p ? p->find("Regex") : nullptr;
  const JsonValue* literal = p ? p->find("String") : nullptr;
  if (regex && regex->type == Type::string) return regex->string;
  if (literal && literal->type == Type::string) {
    std::string escaped;  // every ASCII punctuation escaped: the literal matches as written
    for (char c : literal->string) {
      if (uint8_t(c) < 0x80 && !std::isalnum(uint8_t(c))) escaped += '\\';
      escaped += c;
    }
    return escaped;
  }
  fail_file(file, "pre_tokenizer Split needs a pattern {\"Regex\": ...} or {\"String\": ...}");
}

void add_stage(const fs::path& file, const JsonValue& stage, PreTokenizer& pre, bool& byte_level) {
  const std::string type = type_of(stage);
  if (type == "ByteLevel") {
    if (flag(stage, "add_prefix_space", false))
      fail_file(file, "pre_tokenizer ByteLevel with add_prefix_space true is not supported");
    if (flag(stage, "use_regex", true)) pre.add_isolating_stage(kGpt2Pattern);
    byte_level = true;
  } else if (type == "Split") {
    const JsonValue* behavior = stage.find("behavior");
    const std::string b = behavior && behavior->type == Type::string ? behavior->string : "?";
    if (b != "Isolated")
      fail_file(file,
                "pre_tokenizer Split with behavior '" + b + "' is not supported (only Isolated)");
    if (flag(stage, "invert", false))
      fail_file(file, "pre_tokenizer Split with invert true is not supported");
    try {
      pre.add_isolating_stage(split_pattern(file, stage));
    } catch (const std::invalid_argument& e) {
      fail_file(file, std::string("pre_tokenizer Split ") + e.what());
    }
  } else if (type == "Digits") {
    // Rust's char::is_numeric, which Hugging Face uses, is the Unicode category N.
    pre.add_isolating_stage(flag(stage, "individual_digits", false) ? "\\p{N}" : "\\p{N}+");
  } else {
    fail_file(file, "pre_tokenizer " + type + " is not supported (only ByteLevel, Split, Digits)");
  }
}

std::unique_ptr<PreTokenizer> read_pre_tokenizer(const fs::path& file, const JsonValue& root) {
  const JsonValue* p = root.find("pre_tokenizer");
  if (!p || p->type != Type::object)
    fail_file(
        file,
        "a tokenizer without a pre_tokenizer is not supported (byte-level BPE needs ByteLevel)");
  auto pre = std::make_unique<PreTokenizer>();
  bool byte_level = false;
  if (type_of(*p) == "Sequence") {
    const JsonValue* list = p->find("pretokenizers");
    if (!list || list->type != Type::array)
      fail_file(file, "pre_tokenizer Sequence has no pretokenizers list");
    for (const JsonValue& stage : list->array) add_stage(file, stage, *pre, byte_level);
  } else {
    add_stage(file, *p, *pre, byte_level);
  }
  if (!byte_level)
    fail_file(file, "pre_tokenizer has no ByteLevel step; only byte-level BPE is supported");
  return pre;
}

void check_model(const fs::path& file, const JsonValue& model) {
  const JsonValue* type = model.find("type");
  if (type && type->type == Type::string && type->string != "BPE")
    fail_file(file, "model " + type->string + " is not supported (only byte-level BPE)");
  const JsonValue* dropout = model.find("dropout");
  if (dropout && dropout->type == Type::number && dropout->number != 0)
    fail_file(file, "BPE dropout is not supported");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const JsonValue* a = model.find(affix);
    if (a && a->type == Type::string && !a->string.empty())
      fail_file(file, std::string("BPE ") + affix + " '" + a->string + "' is not supported");
  }
  if (flag(model, "byte_fallback", false)) fail_file(file, "BPE byte_fallback is not supported");
}

std::vector<SpecialToken> read_added_tokens(const fs::path& file, const JsonValue& root) {
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
    added.push_back(
        {content->string, token_id(file, *id, "added token '" + content->string + "'")});
  }
  return added;
}

Merges read_merges(const fs::path& file, const JsonValue& model) {
  const JsonValue* list = model.find("merges");
  if (!list || list->type != Type::array) fail_file(file, "model.merges must be a list");
  Merges merges;
  merges.reserve(list->array.size());
  for (const JsonValue& m : list->array) {
    const std::size_t number = merges.size() + 1;
    if (m.type == Type::string) {
      merges.push_back(split_merge(file, m.string, number));
    } else if (m.type == Type::array && m.array.size() == 2 && m.array[0].type == Type::string &&
               m.array[1].type == Type::string) {
      merges.emplace_back(token_bytes(file, m.array[0].string),
                          token_bytes(file, m.array[1].string));
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
  check_model(file, *model);
  const Normalization normalization = read_normalizer(file, root);
  auto pre = read_pre_tokenizer(file, root);
  auto added = read_added_tokens(file, root);
  const JsonValue* vocab = model->find("vocab");
  if (!vocab) fail_file(file, "model.vocab is missing");
  try {
    auto tokenizer = std::make_unique<Tokenizer>(read_vocab(file, *vocab, added),
                                                 read_merges(file, *model), std::move(pre), added);
    tokenizer->bpe().set_ignore_merges(flag(*model, "ignore_merges", false));
    tokenizer->set_normalization(normalization);
    tokenizer->set_post_processor(PostProcessor(root.find("post_processor"), file.string()));
    return tokenizer;
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    if (what.rfind(file.string(), 0) == 0) throw;
    fail_file(file, what);
  }
}

}  // namespace remat::text
