#include "formats/preference_rows.h"

#include <algorithm>
#include <stdexcept>

#include "base/ignore_target.h"
#include "formats/tokenizer_source.h"
#include "text/jsonl_examples.h"

namespace remat {
namespace {

using Type = JsonValue::Type;
using text::JsonlExample;
using text::MaskedTokens;

// `key` of `object`: a string, or a checked non-empty list of messages.
const JsonValue& answer_field(const JsonValue& object, const std::string& key) {
  const JsonValue* v = object.find(key);
  if (!v) throw std::invalid_argument("missing \"" + key + "\"");
  if (v->type == Type::array) return text::checked_messages(*v, key);
  if (v->type != Type::string)
    throw std::invalid_argument("\"" + key + "\" is " + text::json_type_name(v->type) +
                                ", not a string or a list of messages");
  return *v;
}

bool json_equal(const JsonValue& a, const JsonValue& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case Type::null:
      return true;
    case Type::boolean:
      return a.boolean == b.boolean;
    case Type::number:
      return a.number == b.number;
    case Type::string:
      return a.string == b.string;
    case Type::array:
      return std::equal(a.array.begin(), a.array.end(), b.array.begin(), b.array.end(), json_equal);
    case Type::object:
      return std::equal(a.object.begin(), a.object.end(), b.object.begin(), b.object.end(),
                        [](const auto& x, const auto& y) {
                          return x.first == y.first && json_equal(x.second, y.second);
                        });
  }
  return false;
}

JsonValue messages_slice(const JsonValue& list, std::size_t begin, std::size_t end) {
  JsonValue out{Type::array};
  out.array.assign(list.array.begin() + std::ptrdiff_t(begin),
                   list.array.begin() + std::ptrdiff_t(end));
  return out;
}

// An answer in messages must give the model something to say: an assistant turn with content.
void check_answer_messages(const JsonValue& answer, const std::string& key) {
  bool spoken = false, assistant = false;
  for (const JsonValue& m : answer.array) {
    if (m.find("role")->string != "assistant") continue;
    assistant = true;
    spoken = spoken || !m.find("content")->string.empty();
  }
  if (!assistant)
    throw std::invalid_argument("\"" + key +
                                "\" holds no assistant message, so no answer to score");
  if (!spoken) throw std::invalid_argument("\"" + key + "\" is an empty answer");
}

// The answer's row, built as the SFT path builds the same prompt and completion.
MaskedTokens encode_answer(text::ChatExamples& chat, const JsonValue& prompt,
                           const JsonValue& answer, const std::string& key) {
  if ((prompt.type == Type::string) != (answer.type == Type::string))
    throw std::invalid_argument("\"prompt\" and \"" + key +
                                "\" mix a string and a list of messages: give both as strings "
                                "(standard) or both as messages (conversational)");
  if (answer.type == Type::string) {
    if (answer.string.empty()) throw std::invalid_argument("\"" + key + "\" is an empty answer");
    JsonlExample e;
    e.shape = JsonlExample::Shape::prompt_completion;
    e.prompt = prompt.string;
    e.completion = answer.string;
    return chat.encode(e);
  }
  check_answer_messages(answer, key);
  JsonValue conversation = prompt;
  conversation.array.insert(conversation.array.end(), answer.array.begin(), answer.array.end());
  return chat.encode_conversation(conversation, prompt.array.size());
}

TokenExample token_example(MaskedTokens m, std::size_t line) {
  return {std::move(m.ids), std::move(m.mask), line};
}

JsonValue parse_object(std::string_view line) {
  JsonValue object;
  try {
    object = parse_json(line);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("not JSON (") + e.what() + ")");
  }
  if (object.type != Type::object)
    throw std::invalid_argument(std::string("is ") + text::json_type_name(object.type) +
                                ", not a JSON object");
  return object;
}

PreferencePair parse_pair(std::string_view line, text::ChatExamples& chat) {
  const JsonValue object = parse_object(line);
  const JsonValue& chosen = answer_field(object, "chosen");
  const JsonValue& rejected = answer_field(object, "rejected");
  if (object.find("prompt")) {
    const JsonValue& prompt = answer_field(object, "prompt");
    if (json_equal(chosen, rejected))
      throw std::invalid_argument("\"chosen\" and \"rejected\" are the same answer");
    return {token_example(encode_answer(chat, prompt, chosen, "chosen"), 0),
            token_example(encode_answer(chat, prompt, rejected, "rejected"), 0)};
  }
  if (chosen.type != Type::array || rejected.type != Type::array)
    throw std::invalid_argument(
        "missing \"prompt\" (only conversations, \"chosen\" and \"rejected\" as lists of "
        "messages, may leave it implicit)");
  // The implicit prompt: the messages both conversations open with (TRL's extract_prompt).
  std::size_t shared = 0;
  while (shared < chosen.array.size() && shared < rejected.array.size() &&
         json_equal(chosen.array[shared], rejected.array[shared]))
    ++shared;
  if (shared == chosen.array.size() && shared == rejected.array.size())
    throw std::invalid_argument("\"chosen\" and \"rejected\" are the same conversation");
  for (const char* key : {"chosen", "rejected"})
    if (shared == answer_field(object, key).array.size())
      throw std::invalid_argument(std::string("\"") + key +
                                  "\" is an empty answer: it is all prompt, the messages it "
                                  "shares with the other conversation");
  const JsonValue prompt = messages_slice(chosen, 0, shared);
  const JsonValue chosen_answer = messages_slice(chosen, shared, chosen.array.size());
  const JsonValue rejected_answer = messages_slice(rejected, shared, rejected.array.size());
  return {token_example(encode_answer(chat, prompt, chosen_answer, "chosen"), 0),
          token_example(encode_answer(chat, prompt, rejected_answer, "rejected"), 0)};
}

FeedbackExample parse_feedback(std::string_view line, text::ChatExamples& chat) {
  const JsonValue object = parse_object(line);
  const JsonValue& prompt = answer_field(object, "prompt");
  const JsonValue& completion = answer_field(object, "completion");
  const JsonValue* label = object.find("label");
  if (!label)
    throw std::invalid_argument("missing \"label\" (true: desirable, false: undesirable)");
  if (label->type != Type::boolean)
    throw std::invalid_argument(std::string("\"label\" is ") + text::json_type_name(label->type) +
                                ", not true or false");
  return {token_example(encode_answer(chat, prompt, completion, "completion"), 0), label->boolean};
}

// Calls parse(line) for each non-blank line, numbering lines from 1; errors gain the file and
// line.
template <typename T, typename Parse>
std::vector<T> parse_lines(std::string_view content, const std::string& origin, Parse parse) {
  std::vector<T> out;
  std::size_t number = 0;
  for (std::size_t start = 0; start < content.size();) {
    std::size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    const std::string_view line = content.substr(start, end - start);
    start = end + 1;
    ++number;
    if (text::blank_jsonl_line(line)) continue;
    try {
      out.push_back(parse(line, number));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(origin + ": line " + std::to_string(number) + ": " + e.what());
    }
  }
  if (out.empty())
    throw std::invalid_argument(origin +
                                ": holds no example (JSONL: one JSON object on each line)");
  return out;
}

bool cut(const TokenExample& e, int seq) {
  return e.ids.size() > std::size_t(seq) + 1;
}
bool scores_nothing(const TokenExample& e, int seq) {
  return trained_targets_within(e, seq) == 0;
}

std::size_t first_trained(const TokenExample& e) {
  return std::size_t(std::find(e.mask.begin(), e.mask.end(), uint8_t(1)) - e.mask.begin());
}

}  // namespace

const char* objective_name(PreferenceObjective objective) {
  return objective == PreferenceObjective::dpo ? "dpo" : "kto";
}

PreferenceRows::PreferenceRows(std::vector<PreferencePair> pairs, int seq, uint32_t pad,
                               std::string origin)
    : objective_(PreferenceObjective::dpo), seq_(seq), pad_(pad), origin_(std::move(origin)) {
  if (seq < 1) throw std::invalid_argument("sequence length must be at least 1");
  report_.examples = pairs.size();
  for (PreferencePair& p : pairs)
    if (keep_or_drop(cut(p.chosen, seq) || cut(p.rejected, seq),
                     scores_nothing(p.chosen, seq) || scores_nothing(p.rejected, seq),
                     p.chosen.line))
      pairs_.push_back(std::move(p));
  require_examples();
}

PreferenceRows::PreferenceRows(std::vector<FeedbackExample> feedback, int seq, uint32_t pad,
                               std::string origin)
    : objective_(PreferenceObjective::kto), seq_(seq), pad_(pad), origin_(std::move(origin)) {
  if (seq < 1) throw std::invalid_argument("sequence length must be at least 1");
  report_.examples = feedback.size();
  for (FeedbackExample& f : feedback) {
    if (!keep_or_drop(cut(f.completion, seq), scores_nothing(f.completion, seq), f.completion.line))
      continue;
    ++(f.desirable ? report_.desirable : report_.undesirable);
    feedback_.push_back(std::move(f));
  }
  require_examples();
}

bool PreferenceRows::keep_or_drop(bool was_cut, bool empty, std::size_t line) {
  if (empty) {
    if (report_.dropped++ == 0) report_.first_dropped_line = line;
    return false;
  }
  report_.cut += was_cut;
  return true;
}

void PreferenceRows::require_examples() const {
  if (size() == 0)
    throw std::invalid_argument(origin_ + ": none of its " + std::to_string(report_.examples) +
                                (objective_ == PreferenceObjective::dpo ? " pairs" : " examples") +
                                " keeps every answer's trained tokens within --seq " +
                                std::to_string(seq_) + " + 1 tokens");
}

std::size_t PreferenceRows::size() const {
  return objective_ == PreferenceObjective::dpo ? pairs_.size() : feedback_.size();
}

std::size_t PreferenceRows::example_of(uint64_t index, int batch_size, int b) const {
  return std::size_t((index * uint64_t(batch_size) + uint64_t(b)) % size());
}

std::pair<std::size_t, std::size_t> PreferenceRows::kl_source(uint64_t index, int batch_size,
                                                              int b) const {
  return {example_of(index, batch_size, b),
          example_of(index, batch_size, (b + batch_size - 1) % batch_size)};
}

std::vector<uint8_t> PreferenceRows::desirable(uint64_t index, int batch_size) const {
  std::vector<uint8_t> labels;
  if (objective_ == PreferenceObjective::kto)
    for (int b = 0; b < batch_size; ++b)
      labels.push_back(feedback_[example_of(index, batch_size, b)].desirable);
  return labels;
}

Batch PreferenceRows::batch(uint64_t index, int batch_size) const {
  if (batch_size < 1) throw std::invalid_argument("a preference batch holds at least 1 example");
  const std::size_t B = std::size_t(batch_size);
  std::vector<const TokenExample*> rows(2 * B);
  std::vector<TokenExample> kl;
  if (objective_ == PreferenceObjective::dpo) {
    for (std::size_t b = 0; b < B; ++b) {
      const PreferencePair& p = pairs_[example_of(index, batch_size, int(b))];
      rows[b] = &p.chosen;
      rows[B + b] = &p.rejected;
    }
  } else {
    for (std::size_t b = 0; b < B; ++b)
      rows[b] = &feedback_[example_of(index, batch_size, int(b))].completion;
    kl.reserve(B);
    for (std::size_t b = 0; b < B; ++b) {
      const auto [prompt, answer] = kl_source(index, batch_size, int(b));
      kl.push_back(kl_example(feedback_[prompt].completion, feedback_[answer].completion));
    }
    for (std::size_t b = 0; b < B; ++b) rows[B + b] = &kl[b];
  }
  return example_batch(rows, seq_, pad_);
}

void PreferenceRows::check_vocab(std::size_t vocab) const {
  auto check = [&](const TokenExample& e) {
    for (std::size_t t = 0; t < e.ids.size(); ++t)
      if (e.ids[t] >= vocab)
        throw std::invalid_argument(origin_ + ": line " + std::to_string(e.line) + ": token " +
                                    std::to_string(t) + " is id " + std::to_string(e.ids[t]) +
                                    ", but the model's vocabulary has " + std::to_string(vocab) +
                                    " ids (--vocab)");
  };
  for (const PreferencePair& p : pairs_) {
    check(p.chosen);
    check(p.rejected);
  }
  for (const FeedbackExample& f : feedback_) check(f.completion);
}

Batch example_batch(const std::vector<const TokenExample*>& rows, int seq, uint32_t pad) {
  const std::size_t T = std::size_t(seq);
  Batch b;
  b.tokens.assign(rows.size() * T, pad);
  b.targets.assign(b.tokens.size(), kIgnoreTarget);
  for (std::size_t r = 0; r < rows.size(); ++r)
    fill_example_row(*rows[r], seq, b.tokens.data() + r * T, b.targets.data() + r * T);
  return b;
}

TokenExample kl_example(const TokenExample& prompt_of, const TokenExample& answer_of) {
  const std::size_t p = first_trained(prompt_of), a = first_trained(answer_of);
  TokenExample e;
  e.line = prompt_of.line;
  e.ids.assign(prompt_of.ids.begin(), prompt_of.ids.begin() + std::ptrdiff_t(p));
  e.mask.assign(p, 0);
  e.ids.insert(e.ids.end(), answer_of.ids.begin() + std::ptrdiff_t(a), answer_of.ids.end());
  e.mask.insert(e.mask.end(), answer_of.mask.begin() + std::ptrdiff_t(a), answer_of.mask.end());
  return e;
}

std::vector<PreferencePair> encode_preference_pairs(std::string_view content,
                                                    const std::string& origin,
                                                    text::ChatExamples& chat) {
  return parse_lines<PreferencePair>(content, origin, [&](std::string_view line, std::size_t n) {
    PreferencePair p = parse_pair(line, chat);
    p.chosen.line = p.rejected.line = n;
    return p;
  });
}

std::vector<FeedbackExample> encode_feedback(std::string_view content, const std::string& origin,
                                             text::ChatExamples& chat) {
  return parse_lines<FeedbackExample>(content, origin, [&](std::string_view line, std::size_t n) {
    FeedbackExample f = parse_feedback(line, chat);
    f.completion.line = n;
    return f;
  });
}

PreferenceRows read_preference_rows(const std::filesystem::path& file,
                                    PreferenceObjective objective, text::Tokenizer& tokenizer,
                                    const std::filesystem::path& tokenizer_path,
                                    const std::optional<std::filesystem::path>& chat_template,
                                    int seq) {
  auto chat = chat_examples_from(tokenizer, tokenizer_path, chat_template);
  const std::string content = read_data_file(file);
  const std::string origin = file.string();
  if (objective == PreferenceObjective::dpo)
    return PreferenceRows(encode_preference_pairs(content, origin, chat), seq, 0, origin);
  return PreferenceRows(encode_feedback(content, origin, chat), seq, 0, origin);
}

}  // namespace remat
