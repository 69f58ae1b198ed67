#include "text/chat_examples.h"

#include <algorithm>
#include <stdexcept>

#include "text/vocab_files.h"

namespace remat::text {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kEndOfText = "<|endoftext|>";

std::string difference(const std::string& prefix, const std::string& whole);

struct Span {
  std::size_t begin, end;  // bytes [begin, end) of the encoded text
};

// Where each token of `ids` starts in `text`, which they encode: byte-level BPE tokens (special
// tokens included) are contiguous pieces of the text; a tokenizer.json decoder (character-level
// BPE) says where each token's text begins, provided it gives `text` back; a SentencePiece
// vocabulary notes where each begins as it encodes.
std::vector<std::size_t> token_starts(const Tokenizer& tokenizer, const std::vector<TokenId>& ids,
                                      const std::string& text) {
  // A SentencePiece vocabulary says where its tokens begin in the text itself.
  if (auto encoded = tokenizer.encoded_starts(text)) {
    if (encoded->size() != ids.size())
      throw std::logic_error("the tokens of this example's text were not encoded from it");
    return std::move(*encoded);
  }
  std::vector<std::size_t> starts;
  const std::string decoded = tokenizer.decode(ids, &starts);
  if (tokenizer.has_decoder() && decoded != text) {
    std::string why = difference(text, decoded);
    if (why.empty()) why = difference(decoded, text);
    throw std::invalid_argument(
        "the tokenizer does not decode this example's text back to itself (" + why +
        "), so the tokens of the turns to train cannot be located");
  }
  return starts;
}

std::vector<uint8_t> mask_by_first_byte(const Tokenizer& tokenizer, const std::vector<TokenId>& ids,
                                        const std::string& text, const std::vector<Span>& spans) {
  const auto starts = token_starts(tokenizer, ids, text);
  std::vector<uint8_t> mask(ids.size(), 0);
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (const Span& s : spans)
      if (starts[i] >= s.begin && starts[i] < s.end) mask[i] = 1;
  return mask;
}

// Up to 24 bytes of `s` from `at`, newlines and other control bytes escaped.
std::string excerpt(const std::string& s, std::size_t at) {
  std::string out;
  for (std::size_t i = at; i < std::min(s.size(), at + 24); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n')
      out += "\\n";
    else if (c < 0x20)
      out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    else
      out += char(c);
  }
  return "'" + out + (at + 24 < s.size() ? "...'" : "'");
}

// "" when `prefix` is a prefix of `whole`; otherwise where and how they part.
std::string difference(const std::string& prefix, const std::string& whole) {
  const auto [p, w] = std::mismatch(prefix.begin(), prefix.end(), whole.begin(), whole.end());
  if (p == prefix.end()) return "";
  const std::size_t at = std::size_t(p - prefix.begin());
  return "they part at byte " + std::to_string(at) + ": " + excerpt(prefix, at) + " against " +
         (w == whole.end() ? std::string("the end") : excerpt(whole, at));
}

JsonValue first_messages(const JsonValue& messages, std::size_t count) {
  JsonValue out{JsonValue::Type::array};
  out.array.assign(messages.array.begin(), messages.array.begin() + std::ptrdiff_t(count));
  return out;
}

JsonValue message(const char* role, const std::string& content) {
  JsonValue m{JsonValue::Type::object};
  m.object["role"].type = JsonValue::Type::string;
  m.object["role"].string = role;
  m.object["content"].type = JsonValue::Type::string;
  m.object["content"].string = content;
  return m;
}

}  // namespace

ChatExamples::ChatExamples(Tokenizer& tokenizer, ChatOptions options,
                           std::optional<ChatTemplate> chat, std::string template_origin)
    : tokenizer_(tokenizer),
      options_(std::move(options)),
      chat_(std::move(chat)),
      template_origin_(std::move(template_origin)) {}

TokenId ChatExamples::eos() const {
  if (options_.eos_token.empty())
    throw std::invalid_argument(
        "a text or prompt/completion example ends with the eos token, but the tokenizer's "
        "configuration names none (eos_token in tokenizer_config.json, tokenizer.ggml.eos_token_id "
        "in "
        "a GGUF file)");
  const auto id = tokenizer_.special_id(options_.eos_token);
  if (!id)
    throw std::invalid_argument("the eos token '" + options_.eos_token +
                                "' is not a special token of the tokenizer");
  return *id;
}

MaskedTokens ChatExamples::encode_text(const std::string& text) {
  MaskedTokens out;
  out.ids = tokenizer_.post_processor().apply(tokenizer_.encode(text));
  out.ids.push_back(eos());
  out.mask.assign(out.ids.size(), 1);
  return out;
}

// The completion's tokens, and everything after the text (post-processor tokens, eos), are
// trained: the first trained token is the first whose first byte is at or past the prompt's end.
MaskedTokens ChatExamples::encode_prompt_completion(const std::string& prompt,
                                                    const std::string& completion) {
  const std::vector<TokenId> text = tokenizer_.encode(prompt + completion);
  const auto starts = token_starts(tokenizer_, text, prompt + completion);
  const std::size_t first =
      std::size_t(std::find_if(starts.begin(), starts.end(),
                               [&](std::size_t s) { return s >= prompt.size(); }) -
                  starts.begin());
  const PostProcessor& post = tokenizer_.post_processor();
  MaskedTokens out;
  out.ids = post.apply(text);
  out.ids.push_back(eos());
  out.mask.assign(out.ids.size(), 1);
  std::fill_n(out.mask.begin(), post.before().size() + first, uint8_t(0));
  return out;
}

MaskedTokens ChatExamples::encode_conversation(const JsonValue& messages,
                                               std::size_t first_trained) {
  return encode_messages(messages, first_trained);
}

MaskedTokens ChatExamples::encode_messages(const JsonValue& messages, std::size_t first_trained) {
  if (!chat_)
    throw std::invalid_argument("a \"messages\" example needs a chat template, and " +
                                template_origin_ + "; give --chat-template FILE");
  ChatOptions final_turn = options_, next_turn = options_;
  final_turn.add_generation_prompt = false;
  next_turn.add_generation_prompt = true;
  const std::string whole = chat_->render(messages, final_turn);
  std::vector<Span> spans;
  for (std::size_t i = 0; i < messages.array.size(); ++i) {
    if (i < first_trained || messages.array[i].find("role")->string != "assistant") continue;
    const std::string before = chat_->render(first_messages(messages, i), next_turn);
    const std::string through = chat_->render(first_messages(messages, i + 1), final_turn);
    std::string why = difference(before, through);
    if (!why.empty())
      why = "its rendering of messages[:" + std::to_string(i) +
            "] with add_generation_prompt is not a prefix of its rendering of messages[:" +
            std::to_string(i + 1) + "] (" + why + ")";
    else if (!(why = difference(through, whole)).empty())
      why = "its rendering of messages[:" + std::to_string(i + 1) +
            "] is not a prefix of the whole conversation's (" + why + ")";
    if (!why.empty())
      throw std::invalid_argument(
          "messages[" + std::to_string(i) + "] (assistant): the trained text of this turn cannot " +
          "be located with the chat template of " + template_origin_ + ": " + why +
          "; give --chat-template FILE with a template whose every turn extends the one before");
    spans.push_back({before.size(), through.size()});
  }
  MaskedTokens out;
  out.ids = tokenizer_.encode(whole);
  out.mask = mask_by_first_byte(tokenizer_, out.ids, whole, spans);
  return out;
}

MaskedTokens ChatExamples::encode(const JsonlExample& e) {
  using Shape = JsonlExample::Shape;
  MaskedTokens out;
  if (e.shape == Shape::text) {
    out = encode_text(e.text);
  } else if (e.shape == Shape::messages) {
    out = encode_messages(e.messages);
  } else if (chat_) {
    JsonValue messages{JsonValue::Type::array};
    messages.array = {message("user", e.prompt), message("assistant", e.completion)};
    out = encode_messages(messages);
  } else {
    out = encode_prompt_completion(e.prompt, e.completion);
  }
  out.line = e.line;
  return out;
}

std::vector<MaskedTokens> ChatExamples::encode_all(const std::vector<JsonlExample>& examples,
                                                   const std::string& origin) {
  std::vector<MaskedTokens> out;
  out.reserve(examples.size());
  for (const JsonlExample& e : examples) {
    try {
      out.push_back(encode(e));
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument(origin + ": line " + std::to_string(e.line) + ": " +
                                  error.what());
    }
  }
  return out;
}

std::vector<MaskedTokens> ChatExamples::encode_file(const fs::path& jsonl) {
  return encode_all(parse_jsonl_examples(read_file(jsonl), jsonl.string()), jsonl.string());
}

ChatExamples chat_examples_for(Tokenizer& tokenizer, const fs::path& tokenizer_path,
                               const std::optional<fs::path>& template_file) {
  std::error_code ec;
  const fs::path dir =
      fs::is_directory(tokenizer_path, ec) ? tokenizer_path : tokenizer_path.parent_path();
  const fs::path config = dir / "tokenizer_config.json";
  ChatTemplateFile file;
  std::string origin;
  if (fs::exists(config, ec)) {
    file = read_tokenizer_config(config);
    origin = config.string() + (file.source.empty() ? " has no chat_template" : "");
  } else {
    if (tokenizer.special_id(kEndOfText))
      file.options.bos_token = file.options.eos_token = std::string(kEndOfText);
    origin = dir.string() + " has no tokenizer_config.json";
  }
  return chat_examples_with(tokenizer, std::move(file), std::move(origin), template_file);
}

ChatExamples chat_examples_with(Tokenizer& tokenizer, ChatTemplateFile file, std::string origin,
                                const std::optional<fs::path>& template_file) {
  if (template_file) {
    file.source = read_file(*template_file);
    origin = template_file->string();
    if (file.source.empty()) fail_file(*template_file, "the chat template is empty");
  }
  if (file.source.empty()) return ChatExamples(tokenizer, file.options, std::nullopt, origin);
  try {
    return ChatExamples(tokenizer, file.options, ChatTemplate(file.source), origin);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(origin + ": " + e.what());
  }
}

}  // namespace remat::text
