#include "text/hf_pipeline_json.h"

#include "text/metaspace.h"
#include "text/split_behavior.h"
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

std::string text_of(const JsonValue& v, const std::string& key, const std::string& fallback) {
  const JsonValue* f = v.find(key);
  return f && f->type == Type::string ? f->string : fallback;
}

std::size_t count_of(const fs::path& file, const JsonValue& v, const std::string& key,
                     const std::string& where) {
  const JsonValue* f = v.find(key);
  if (!f) return 0;
  if (f->type != Type::number || f->number < 0 || f->number != double(std::size_t(f->number)))
    fail_file(file, where + " " + key + " must be a non-negative integer");
  return std::size_t(f->number);
}

// The members of a Sequence (`key`: "normalizers", "pretokenizers", "decoders"), or `v` alone.
std::vector<const JsonValue*> steps(const fs::path& file, const JsonValue& v, const char* key,
                                    const std::string& part) {
  if (type_of(v) != "Sequence") return {&v};
  const JsonValue* list = v.find(key);
  if (!list || list->type != Type::array)
    fail_file(file, part + " Sequence has no " + key + " list");
  std::vector<const JsonValue*> out;
  for (const JsonValue& s : list->array)
    for (const JsonValue* inner : steps(file, s, key, part)) out.push_back(inner);
  return out;
}

// A pattern {"String": "..."} (literal: true) or {"Regex": "..."}.
std::string pattern_of(const fs::path& file, const JsonValue& v, const std::string& where,
                       bool& literal) {
  const JsonValue* p = v.find("pattern");
  const JsonValue* regex = p ? p->find("Regex") : nullptr;
  const JsonValue* string = p ? p->find("String") : nullptr;
  literal = string && string->type == Type::string;
  if (literal) return string->string;
  if (regex && regex->type == Type::string) return regex->string;
  fail_file(file, where + " needs a pattern {\"Regex\": ...} or {\"String\": ...}");
}

// A Replace's literal pattern and content (a Regex pattern is refused).
std::pair<std::string, std::string> replace_of(const fs::path& file, const JsonValue& v,
                                               const std::string& part) {
  bool literal = false;
  std::string pattern = pattern_of(file, v, part + " Replace", literal);
  if (!literal) fail_file(file, part + " Replace with a Regex pattern is not supported");
  if (pattern.empty()) fail_file(file, part + " Replace with an empty pattern is not supported");
  return {pattern, text_of(v, "content", "")};
}

PrependScheme scheme_of(const fs::path& file, const JsonValue& v, const std::string& where) {
  if (const JsonValue* s = v.find("prepend_scheme"); s && s->type == Type::string) {
    if (auto scheme = prepend_scheme(s->string)) return *scheme;
    fail_file(file, where + " prepend_scheme '" + s->string + "' is not supported");
  }
  // Files written before prepend_scheme existed say add_prefix_space.
  return flag(v, "add_prefix_space", true) ? PrependScheme::always : PrependScheme::never;
}

void add_stage(const fs::path& file, const JsonValue& stage, PreTokenizer& pre, bool& byte_level) {
  const std::string type = type_of(stage);
  if (type == "ByteLevel") {
    if (flag(stage, "add_prefix_space", false))
      fail_file(file, "pre_tokenizer ByteLevel with add_prefix_space true is not supported");
    if (flag(stage, "use_regex", true)) pre.add_isolating_stage(kGpt2Pattern);
    byte_level = true;
  } else if (type == "Split") {
    const std::string b = text_of(stage, "behavior", "?");
    const auto behavior = split_behavior(b);
    if (!behavior)
      fail_file(file, "pre_tokenizer Split with behavior '" + b + "' is not supported");
    bool literal = false;
    const std::string pattern = pattern_of(file, stage, "pre_tokenizer Split", literal);
    try {
      pre.add_stage(
          std::make_unique<SplitStage>(pattern, literal, *behavior, flag(stage, "invert", false)));
    } catch (const std::invalid_argument& e) {
      fail_file(file, std::string("pre_tokenizer Split ") + e.what());
    }
  } else if (type == "Digits") {
    // Rust's char::is_numeric, which Hugging Face uses, is the Unicode category N.
    pre.add_isolating_stage(flag(stage, "individual_digits", false) ? "\\p{N}" : "\\p{N}+");
  } else if (type == "Metaspace") {
    try {
      pre.add_stage(std::make_unique<MetaspaceStage>(
          text_of(stage, "replacement", "\u2581"),
          scheme_of(file, stage, "pre_tokenizer Metaspace"), flag(stage, "split", true)));
    } catch (const std::invalid_argument& e) {
      fail_file(file, std::string("pre_tokenizer Metaspace: ") + e.what());
    }
  } else {
    fail_file(file, "pre_tokenizer " + type +
                        " is not supported (only ByteLevel, Split, Digits, Metaspace)");
  }
}

void add_decoder_step(const fs::path& file, const JsonValue& step, Decoder& d) {
  const std::string type = type_of(step);
  try {
    if (type == "Replace") {
      auto [pattern, content] = replace_of(file, step, "decoder");
      d.add_replace(pattern, content);
    } else if (type == "ByteFallback") {
      d.add_byte_fallback();
    } else if (type == "Fuse") {
      d.add_fuse();
    } else if (type == "Strip") {
      d.add_strip(text_of(step, "content", " "), count_of(file, step, "start", "decoder Strip"),
                  count_of(file, step, "stop", "decoder Strip"));
    } else if (type == "Metaspace") {
      d.add_metaspace(text_of(step, "replacement", "\u2581"),
                      scheme_of(file, step, "decoder Metaspace") != PrependScheme::never);
    } else {
      fail_file(file, "decoder " + type +
                          " is not supported for character-level BPE (only Replace, "
                          "ByteFallback, Fuse, Strip, Metaspace)");
    }
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    if (what.rfind(file.string(), 0) == 0) throw;
    fail_file(file, "decoder " + type + ": " + what);
  }
}

}  // namespace

Normalizer read_hf_normalizer(const fs::path& file, const JsonValue& root) {
  Normalizer n;
  const JsonValue* v = root.find("normalizer");
  if (!v || v->type == Type::null) return n;
  for (const JsonValue* step : steps(file, *v, "normalizers", "normalizer")) {
    const std::string type = type_of(*step);
    if (type == "NFC") {
      n.add_nfc();
    } else if (type == "Replace") {
      auto [pattern, content] = replace_of(file, *step, "normalizer");
      n.add_replace(pattern, content);
    } else if (type == "Prepend") {
      n.add_prepend(text_of(*step, "prepend", ""));
    } else {
      fail_file(file,
                "normalizer " + type + " is not supported (only NFC, Replace, Prepend, Sequence)");
    }
  }
  return n;
}

std::unique_ptr<PreTokenizer> read_hf_pre_tokenizer(const fs::path& file, const JsonValue& root,
                                                    bool& byte_level) {
  auto pre = std::make_unique<PreTokenizer>();
  byte_level = false;
  const JsonValue* p = root.find("pre_tokenizer");
  if (!p || p->type == Type::null) return pre;
  if (p->type != Type::object) fail_file(file, "pre_tokenizer must be an object or null");
  bool metaspace = false;
  for (const JsonValue* stage : steps(file, *p, "pretokenizers", "pre_tokenizer")) {
    add_stage(file, *stage, *pre, byte_level);
    metaspace = metaspace || type_of(*stage) == "Metaspace";
  }
  if (byte_level && metaspace)
    fail_file(file, "pre_tokenizer Metaspace together with ByteLevel is not supported");
  return pre;
}

std::optional<Decoder> read_hf_decoder(const fs::path& file, const JsonValue& root,
                                       bool byte_level) {
  const JsonValue* v = root.find("decoder");
  const bool none = !v || v->type == Type::null;
  if (byte_level) {
    if (!none && type_of(*v) != "ByteLevel")
      fail_file(file,
                "decoder " + type_of(*v) + " is not supported for byte-level BPE (only ByteLevel)");
    return std::nullopt;
  }
  Decoder d;
  if (none) {
    d.set_join_with_spaces(true);
    return d;
  }
  if (type_of(*v) == "ByteLevel")
    fail_file(file, "decoder ByteLevel without a ByteLevel pre_tokenizer is not supported");
  for (const JsonValue* step : steps(file, *v, "decoders", "decoder"))
    add_decoder_step(file, *step, d);
  return d;
}

}  // namespace remat::text
