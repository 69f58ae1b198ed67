#include "text/llama_vocab.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "text/byte_unicode.h"

namespace remat::text {

namespace {

// The regular expressions of llama.cpp's llm_tokenizer_bpe, as written there (its "adapted" forms:
// (?i:'s|...) spelled as explicit case pairs). PreTokenizer reads \s as Unicode's White_Space,
// which is llama.cpp's whitespace set too.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreEntry {
  std::string_view name;
  LlamaPreTokenizer pre;
};

// llama.cpp's tokenizer.ggml.pre names (llama_vocab::impl::load) for the pre-tokenizer types
// remat reproduces, grouped by the patterns they run; names whose llama.cpp handling adds more
// than patterns and these two flags (a separator token, per-token strip rules, other byte maps)
// are left out.
const std::vector<PreEntry>& pre_table() {
  static const std::vector<PreEntry> table = [] {
    std::vector<PreEntry> t;
    const LlamaPreTokenizer gpt2{{kGpt2}, false, false};
    for (std::string_view n : {"gpt-2", "phi-2", "gigachat", "a.x-4.0", "mellum", "exaone4", "mpt",
                               "olmo", "jais", "trillion", "granite-docling"})
      t.push_back({n, gpt2});
    const LlamaPreTokenizer llama3{{kLlama3}, true, true};
    for (std::string_view n : {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                               "midm-2.0", "lfm2", "jina-v5-nano"})
      t.push_back({n, llama3});
    const LlamaPreTokenizer llama3_plain{{kLlama3}, false, false};
    for (std::string_view n : {"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"})
      t.push_back({n, llama3_plain});
    const LlamaPreTokenizer qwen2{{kQwen2}, false, false};
    for (std::string_view n : {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez",
                               "stablelm2", "hunyuan", "solar-open"})
      t.push_back({n, qwen2});
    t.push_back({"qwen35", {{kQwen35}, false, false}});
    const LlamaPreTokenizer digits{{R"(\p{N})", kGpt2}, false, false};
    for (std::string_view n : {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone",
                               "minerva-7b", "mellum2"})
      t.push_back({n, digits});
    t.push_back(
        {"falcon", {{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"([0-9][0-9][0-9])"}, false, false}});
    t.push_back(
        {"default",
         {{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", R"([0-9][0-9][0-9])"}, false, false}});
    return t;
  }();
  return table;
}

[[noreturn]] void fail(const LlamaVocab& v, const std::string& what) {
  throw std::invalid_argument(v.origin + ": " + what);
}

// llama.cpp's end-of-generation texts (llama_vocab::impl::load), made control tokens whatever
// their type. Its end-of-turn and end-of-message texts, made control only while their id keys are
// unset, are all among them, so those keys change no token's type.
bool end_of_generation(std::string_view text) {
  // clang-format off
  static const std::string_view kTexts[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
      "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
      "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
      "<｜end▁of▁sentence｜>", "[e~["};
  // clang-format on
  return std::find(std::begin(kTexts), std::end(kTexts), text) != std::end(kTexts);
}

// The texts llama.cpp takes for each LlamaFim kind while the kind's id key is unset.
const std::vector<std::string_view>& fim_texts(std::size_t kind) {
  static const std::vector<std::string_view> kTexts[kLlamaFimKinds] = {
      {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
       "<|code_prefix|>", "<|prefix|>"},
      {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
       "<|code_suffix|>", "<|suffix|>"},
      {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>",
       "<|code_middle|>", "<|middle|>"},
      {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
      {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
      {"<|file_sep|>"}};
  return kTexts[kind];
}

// A token's text as llama.cpp keeps it: an empty one is named so that it stays distinct.
std::string piece_text(const LlamaVocab& v, std::size_t i) {
  return v.tokens[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : v.tokens[i];
}

// llama.cpp ORs the control attribute into the type; an unknown token stays unknown here, which
// is matched where control tokens are.
void force_control(LlamaTokenType& t) {
  if (t != LlamaTokenType::unknown) t = LlamaTokenType::control;
}

// llama.cpp takes, for each fill-in-the-middle kind whose key is unset, the first of its texts
// that it meets walking its token_to_id, a std::unordered_map<std::string, llama_token> filled in
// id order. `map` is built the same way, so it is walked in the same order (with the same standard
// library, libstdc++ for both here); the order matters only where a vocabulary holds two texts of
// one kind.
void force_fim_controls(const LlamaVocab& v,
                        const std::unordered_map<std::string, std::size_t>& map,
                        std::vector<LlamaTokenType>& types) {
  std::array<bool, kLlamaFimKinds> found{};
  for (std::size_t k = 0; k < kLlamaFimKinds; ++k) found[k] = v.fim_ids[k].has_value();
  for (const auto& [text, id] : map)
    for (std::size_t k = 0; k < kLlamaFimKinds; ++k) {
      const auto& texts = fim_texts(k);
      if (!found[k] && std::find(texts.begin(), texts.end(), text) != texts.end()) {
        found[k] = true;
        force_control(types[id]);
      }
    }
}

// Each token's type after llama.cpp's adjustments by text: the fill-in-the-middle and
// end-of-generation control tokens, then its workarounds for gpt-oss (<|channel|> and friends
// user-defined; <|end|> user-defined beside <|return|> and <|call|>, or <|calls|> and <|flush|>)
// and Gemma 4 (</s> normal beside <|tool_response>).
std::vector<LlamaTokenType> token_types(const LlamaVocab& v) {
  std::vector<LlamaTokenType> types(v.tokens.size(), LlamaTokenType::normal);
  if (!v.token_types.empty() && v.token_types.size() < v.tokens.size())
    fail(v, "tokenizer.ggml.token_type has " + std::to_string(v.token_types.size()) +
                " entries for " + std::to_string(v.tokens.size()) + " tokens");
  std::unordered_map<std::string, std::size_t> id_of;
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    const int32_t t = v.token_types.empty() ? 1 : v.token_types[i];
    types[i] = t >= 0 && t <= 6 ? LlamaTokenType(t) : LlamaTokenType::undefined;
    id_of[piece_text(v, i)] = i;
  }
  force_fim_controls(v, id_of, types);
  for (const auto& [text, id] : id_of)
    if (end_of_generation(text)) force_control(types[id]);
  const auto has = [&](const std::string& t) { return id_of.count(t) != 0; };
  for (const char* t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
    if (has(t)) types[id_of[t]] = LlamaTokenType::user_defined;
  const bool call = has("<|call|>") || has("<|calls|>");
  if (has("<|end|>") && call && (has("<|return|>") || has("<|flush|>")))
    types[id_of["<|end|>"]] = LlamaTokenType::user_defined;
  if (has("<|tool_response>") && has("</s>")) types[id_of["</s>"]] = LlamaTokenType::normal;
  return types;
}

bool is_special(LlamaTokenType t) {
  return t == LlamaTokenType::control || t == LlamaTokenType::user_defined ||
         t == LlamaTokenType::unknown;
}

// A token id key's value: nullopt when absent, or out of range as llama.cpp ignores it.
std::optional<TokenId> token_key(const LlamaVocab& v, std::optional<uint64_t> id) {
  if (!id || *id >= v.tokens.size()) return std::nullopt;
  return TokenId(*id);
}

void refuse_unsupported(const LlamaVocab& v) {
  if (v.model != "gpt2" && v.model != "llama")
    fail(v, "tokenizer.ggml.model '" + v.model +
                "' is not supported (remat reads byte-level BPE, 'gpt2', and SentencePiece, "
                "'llama', tokenizers)");
  std::string lower = v.name;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view n : {"phi-3", "phi3", "modern-bert"})
    if (lower.find(n) != std::string::npos)
      fail(v, "general.name '" + v.name +
                  "' gets llama.cpp's strip rules around special tokens, which remat does not "
                  "apply");
}

// The post-processor of llama_tokenize's add_special: bos first when add_bos, eos last when
// add_eos; refusing to encode when one is to be added but names no token (llama.cpp asserts).
PostProcessor add_special(const LlamaVocab& v, bool add_bos, bool add_eos) {
  const auto bos = llama_bos_id(v), eos = llama_eos_id(v);
  if ((add_bos && !bos) || (add_eos && !eos)) {
    const char* which = add_bos && !bos ? "bos" : "eos";
    return PostProcessor::refusing(v.origin, std::string("add_") + which +
                                                 "_token is true but tokenizer.ggml." + which +
                                                 "_token_id names no token");
  }
  std::vector<TokenId> before, after;
  if (add_bos) before.push_back(TokenId(*bos));
  if (add_eos) after.push_back(TokenId(*eos));
  return PostProcessor(std::move(before), std::move(after));
}

// A SentencePiece vocabulary ("llama"), as llama.cpp's LLAMA_VOCAB_TYPE_SPM reads it.
std::unique_ptr<Tokenizer> spm_tokenizer(const LlamaVocab& v) {
  if (v.tokens.empty()) fail(v, "tokenizer.ggml.tokens is empty");
  if (!v.scores.empty() && v.scores.size() < v.tokens.size())
    fail(v, "tokenizer.ggml.scores has " + std::to_string(v.scores.size()) + " entries for " +
                std::to_string(v.tokens.size()) + " tokens");
  const std::vector<LlamaTokenType> types = token_types(v);
  std::vector<SpmPiece> pieces(v.tokens.size());
  std::vector<SpecialToken> specials;
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    pieces[i].text = piece_text(v, i);
    pieces[i].score = v.scores.empty() ? 0.0f : v.scores[i];
    pieces[i].type = types[i];
    if (is_special(types[i]))
      specials.push_back({pieces[i].text, TokenId(i), types[i] == LlamaTokenType::user_defined});
  }
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    tokenizer = std::make_unique<Tokenizer>(
        SpmModel(std::move(pieces), v.add_space_prefix.value_or(true)), std::move(specials));
  } catch (const std::invalid_argument& e) {
    fail(v, std::string("tokenizer.ggml.tokens: ") + e.what());
  }
  tokenizer->set_post_processor(
      add_special(v, v.add_bos.value_or(true), v.add_eos.value_or(false)));
  return tokenizer;
}

}  // namespace

const std::vector<std::string_view>& llama_fim_keys(LlamaFim kind) {
  static const std::vector<std::string_view> kKeys[kLlamaFimKinds] = {
      {"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"},
      {"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
      {"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"},
      {"tokenizer.ggml.fim_pad_token_id"},
      {"tokenizer.ggml.fim_rep_token_id"},
      {"tokenizer.ggml.fim_sep_token_id"}};
  return kKeys[std::size_t(kind)];
}

std::optional<uint64_t> llama_bos_id(const LlamaVocab& v) {
  if (const auto id = token_key(v, v.bos_id)) return *id;
  if (v.model == "llama" && v.tokens.size() > 1) return 1;
  return std::nullopt;
}

std::optional<uint64_t> llama_eos_id(const LlamaVocab& v) {
  if (const auto id = token_key(v, v.eos_id)) return *id;
  if (v.model == "llama" && v.tokens.size() > 2) return 2;
  return std::nullopt;
}

std::optional<LlamaPreTokenizer> llama_pre_tokenizer(std::string_view name) {
  for (const PreEntry& e : pre_table())
    if (e.name == name) return e.pre;
  return std::nullopt;
}

const std::vector<std::string_view>& llama_pre_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> n;
    for (const PreEntry& e : pre_table()) n.push_back(e.name);
    return n;
  }();
  return names;
}

std::unique_ptr<Tokenizer> llama_vocab_tokenizer(const LlamaVocab& v) {
  refuse_unsupported(v);
  if (v.model == "llama") return spm_tokenizer(v);
  // Without a name llama.cpp warns and runs its "default" pre-tokenizer.
  const std::string pre_name = v.pre.value_or("default");
  const auto pre = llama_pre_tokenizer(pre_name);
  if (!pre) {
    std::string names;
    for (std::string_view n : llama_pre_names())
      names += (names.empty() ? "" : ", ") + std::string(n);
    fail(v, "tokenizer.ggml.pre '" + pre_name + "' is not supported (supported: " + names + ")");
  }
  if (v.tokens.empty()) fail(v, "tokenizer.ggml.tokens is empty");
  const std::vector<LlamaTokenType> types = token_types(v);

  std::vector<std::pair<std::string, TokenId>> vocab;
  std::vector<SpecialToken> specials;
  vocab.reserve(v.tokens.size());
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string text = piece_text(v, i);
    // llama.cpp looks every token up by its text after merging, special or not; a text outside
    // GPT-2's byte alphabet is one its byte-level pieces never spell, so only a special token
    // (matched in the text as written) can reach it.
    auto bytes = unicode_text_to_bytes(text);
    if (is_special(types[i])) {
      specials.push_back({text, TokenId(i), types[i] == LlamaTokenType::user_defined});
      if (bytes != text) continue;
    }
    if (bytes) vocab.emplace_back(std::move(*bytes), TokenId(i));
  }

  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(v.merges.size());
  for (std::size_t i = 0; i < v.merges.size(); ++i) {
    const std::string& m = v.merges[i];
    // As llama.cpp splits it: at the first space after the first character.
    const std::size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    auto a = space == std::string::npos ? std::nullopt : unicode_text_to_bytes(m.substr(0, space));
    auto b = space == std::string::npos ? std::nullopt : unicode_text_to_bytes(m.substr(space + 1));
    if (!a || !b || a->empty() || b->empty())
      fail(v, "tokenizer.ggml.merges[" + std::to_string(i) + "] '" + m +
                  "' is not two tokens of GPT-2's byte alphabet separated by a space");
    merges.emplace_back(std::move(*a), std::move(*b));
  }

  std::unique_ptr<Tokenizer> tokenizer;
  try {
    auto stages = std::make_unique<PreTokenizer>();
    for (std::string_view p : pre->patterns) stages->add_isolating_stage(p);
    tokenizer =
        std::make_unique<Tokenizer>(vocab, merges, std::move(stages), std::move(specials),
                                    BpeOptions(MissingBytes::drop), SpecialMatch::longest_first);
  } catch (const std::invalid_argument& e) {
    fail(v, std::string("tokenizer.ggml.tokens and tokenizer.ggml.merges: ") + e.what());
  }
  tokenizer->bpe().set_ignore_merges(pre->ignore_merges);

  // llama.cpp's add_bos/add_eos: the pre-tokenizer's default, replaced by the keys.
  tokenizer->set_post_processor(
      add_special(v, v.add_bos.value_or(pre->add_bos), v.add_eos.value_or(false)));
  return tokenizer;
}

std::optional<std::string> llama_token_text(const Tokenizer& tokenizer,
                                            std::optional<uint64_t> id) {
  if (!id || *id >= tokenizer.vocab_size()) return std::nullopt;
  const auto bytes = tokenizer.token_bytes(TokenId(*id));
  if (!bytes) return std::nullopt;
  return std::string(*bytes);
}

}  // namespace remat::text
