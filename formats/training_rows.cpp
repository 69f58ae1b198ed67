#include "formats/training_rows.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "formats/token_file.h"
#include "formats/tokenizer_source.h"
#include "text/chat_examples.h"

namespace remat {

namespace {

// nanoGPT's train.bin: little-endian uint16 ids, no header.
std::vector<uint32_t> raw_u16(const std::string& bytes, const std::string& origin) {
  if (bytes.size() % 2)
    throw std::invalid_argument(
        origin + ": " + std::to_string(bytes.size()) +
        " bytes is not a whole number of uint16 tokens (--data-format u16)");
  std::vector<uint32_t> tokens(bytes.size() / 2);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    uint16_t t = 0;
    std::memcpy(&t, bytes.data() + 2 * i, 2);
    tokens[i] = t;
  }
  return tokens;
}

}  // namespace

bool reads_as_jsonl(const std::filesystem::path& file, DataFormat format) {
  return format == DataFormat::jsonl ||
         (format == DataFormat::automatic && file.extension() == ".jsonl");
}

TokenStream read_token_stream(const std::filesystem::path& file, DataFormat format,
                              text::Tokenizer* tokenizer) {
  TokenStream s;
  s.origin = file.string();
  if (format == DataFormat::jsonl)
    throw std::invalid_argument(s.origin + ": JSONL examples are rows of their own, not a stream");
  if (format == DataFormat::text && !tokenizer)
    throw std::invalid_argument(s.origin + ": text is read as tokens with a tokenizer");
  std::string bytes = read_data_file(file);
  const bool token_file =
      format == DataFormat::llmc || (format == DataFormat::automatic && is_token_file(bytes));
  if (token_file) {
    s.tokens = parse_token_file(bytes, s.origin);
  } else if (format == DataFormat::u16) {
    s.tokens = raw_u16(bytes, s.origin);
  } else if (tokenizer && format != DataFormat::bytes) {
    s.tokens = tokenizer->encode(bytes);
  } else {
    s.bytes = true;
    s.data = std::move(bytes);
  }
  return s;
}

TrainingRows TrainingRows::of_stream(TokenStream s, int seq) {
  if (s.bytes) return TrainingRows(TokenDataset::from_bytes(s.data, seq, s.origin), true);
  return TrainingRows(TokenDataset::from_tokens(std::move(s.tokens), seq, s.origin), false);
}

const char* TrainingRows::kind() const {
  return examples() ? "examples" : bytes_ ? "bytes" : "tokens";
}

Batch TrainingRows::batch(uint64_t index, int batch_size) const {
  return std::visit([&](const auto& rows) { return rows.batch(index, batch_size); }, rows_);
}

double TrainingRows::unigram_entropy() const {
  return std::visit([](const auto& rows) { return rows.unigram_entropy(); }, rows_);
}

void TrainingRows::check_vocab(std::size_t vocab) const {
  std::visit([&](const auto& rows) { rows.check_vocab(vocab); }, rows_);
}

std::vector<uint32_t> TrainingRows::first_tokens(std::size_t n) const {
  std::vector<uint32_t> tokens;
  if (const ExampleRows* rows = examples())
    tokens = rows->example(rows->example_of_row(0)).ids;
  else
    tokens = std::get<TokenDataset>(rows_).batch(0, 1).tokens;
  tokens.resize(std::min(n, tokens.size()));
  return tokens;
}

std::size_t TrainingRows::stream_size() const {
  const TokenDataset* s = stream();
  return s ? s->size() : 0;
}

TrainingRows read_example_rows(const std::filesystem::path& file, text::Tokenizer& tokenizer,
                               const std::filesystem::path& tokenizer_path,
                               const JsonlOptions& jsonl, int seq) {
  auto chat = chat_examples_from(tokenizer, tokenizer_path, jsonl.chat_template);
  std::vector<TokenExample> examples;
  for (text::MaskedTokens& m : chat.encode_file(file))
    examples.push_back({std::move(m.ids), std::move(m.mask), m.line});
  return TrainingRows(
      ExampleRows(std::move(examples), seq, 0, file.string(), jsonl.shuffle, jsonl.pack));
}

}  // namespace remat
