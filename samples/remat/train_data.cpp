#include "train_data.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "cli_args.h"
#include "formats/token_file.h"
#include "formats/tokenizer_source.h"
#include "text/chat_examples.h"

namespace remat::cli {

namespace {

// nanoGPT's train.bin: little-endian uint16 ids, no header.
std::vector<uint32_t> raw_u16(const std::string& bytes, const std::string& origin) {
  if (bytes.size() % 2)
    throw UsageError(origin + ": " + std::to_string(bytes.size()) +
                     " bytes is not a whole number of uint16 tokens (--data-format u16)");
  std::vector<uint32_t> tokens(bytes.size() / 2);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    uint16_t t = 0;
    std::memcpy(&t, bytes.data() + 2 * i, 2);
    tokens[i] = t;
  }
  return tokens;
}

bool is_jsonl(const std::filesystem::path& file, const std::string& format) {
  return format == "jsonl" || (format == "auto" && file.extension() == ".jsonl");
}

// The tokenizer and where it was read from (its folder holds the chat template).
struct TokenizerUse {
  text::Tokenizer* tokenizer = nullptr;
  std::optional<std::string> path;
};

// Each example of a JSONL file as a row; the padding input is id 0, which every vocabulary has
// and which no trained position sees (it only follows the example).
TrainingRows read_examples(const std::filesystem::path& file, const TokenizerUse& tok,
                           const JsonlOptions& jsonl, int seq) {
  auto chat = chat_examples_from(*tok.tokenizer, *tok.path, jsonl.chat_template);
  std::vector<TokenExample> examples;
  for (text::MaskedTokens& m : chat.encode_file(file))
    examples.push_back({std::move(m.ids), std::move(m.mask), m.line});
  return TrainingRows(
      ExampleRows(std::move(examples), seq, 0, file.string(), jsonl.shuffle, jsonl.pack));
}

// The rows of `file` under the rules of `format`. Token ids are not yet checked against the
// vocabulary.
std::pair<TrainingRows, std::string> read_dataset(const std::filesystem::path& file,
                                                  const std::string& format,
                                                  const TokenizerUse& use,
                                                  const JsonlOptions& jsonl, int seq, int vocab) {
  text::Tokenizer* tok = use.tokenizer;
  if (is_jsonl(file, format)) {
    if (!tok) throw UsageError(file.string() + ": JSONL examples need --tokenizer PATH");
    return {read_examples(file, use, jsonl, seq), "examples"};
  }
  const std::string bytes = read_data_file(file);
  const std::string origin = file.string();
  const bool token_file = format == "llmc" || (format == "auto" && is_token_file(bytes));
  std::vector<uint32_t> tokens;
  if (token_file) {
    tokens = parse_token_file(bytes, origin);
  } else if (format == "u16") {
    tokens = raw_u16(bytes, origin);
  } else if (tok) {
    tokens = tok->encode(bytes);
  } else {
    if (vocab < 256)
      throw UsageError("byte-level data needs --vocab of at least 256, got " +
                       std::to_string(vocab));
    return {TrainingRows(TokenDataset::from_bytes(bytes, seq, origin)), "bytes"};
  }
  return {TrainingRows(TokenDataset::from_tokens(std::move(tokens), seq, origin)), "tokens"};
}

}  // namespace

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
  const auto* stream = std::get_if<TokenDataset>(&rows_);
  return stream ? stream->size() : 0;
}

std::string TrainingRows::packing_summary() const {
  const ExampleRows* e = examples();
  if (!e) return "";
  const PackingReport& p = e->packing();
  const auto rows = [&](uint64_t n, double padding, const char* how, bool used) {
    char line[160];
    std::snprintf(line, sizeof line, "%s%s: %llu rows, %.2f examples/row, %.1f%% padding", how,
                  used ? " (read)" : "", static_cast<unsigned long long>(n),
                  double(e->size()) / double(n), 100.0 * padding);
    return std::string(line);
  };
  return rows(p.plain_rows, p.plain_padding(), "one example a row", !e->packed()) + "; " +
         rows(p.packed_rows, p.packed_padding(), "packed", e->packed());
}

std::string TrainingRows::summary(const char* unit) const {
  if (const auto* stream = std::get_if<TokenDataset>(&rows_))
    return std::to_string(stream->size()) + " " + unit + "s";
  const ExampleRowsReport& r = std::get<ExampleRows>(rows_).report();
  std::string s = std::to_string(r.examples) + " examples, " + std::to_string(r.cut) +
                  " cut to --seq + 1 tokens, " + std::to_string(r.dropped) +
                  " dropped with no trained target left";
  if (r.dropped) s += " (the first at line " + std::to_string(r.first_dropped_line) + ")";
  return s + "; " + std::to_string(r.trained_targets) + " trained targets";
}

TrainingData load_training_data(const std::filesystem::path& file, const std::string& format,
                                const std::optional<std::string>& tokenizer, int seq, int vocab,
                                const JsonlOptions& jsonl) {
  static const char* const kFormats[] = {"auto", "bytes", "text", "llmc", "u16", "jsonl"};
  if (std::find(std::begin(kFormats), std::end(kFormats), format) == std::end(kFormats))
    throw UsageError("--data-format must be auto, bytes, text, llmc, u16 or jsonl, got '" + format +
                     "'");
  if ((format == "text" || format == "jsonl") && !tokenizer)
    throw UsageError("--data-format " + format + " needs --tokenizer PATH");
  if (format == "bytes" && tokenizer)
    throw UsageError("--data-format bytes trains on bytes; drop --tokenizer or the format");
  if ((jsonl.chat_template || jsonl.shuffle || jsonl.pack) && !is_jsonl(file, format))
    throw UsageError(std::string(jsonl.chat_template ? "--chat-template"
                                 : jsonl.shuffle     ? "--shuffle"
                                                     : "--pack") +
                     " applies to JSONL examples; --data " + file.string() +
                     " is not read as JSONL (a .jsonl file, or --data-format jsonl)");
  std::unique_ptr<text::Tokenizer> tok;
  if (tokenizer) tok = load_tokenizer_from(*tokenizer);
  if (tok && tok->vocab_size() > std::size_t(vocab))
    throw UsageError("the tokenizer has " + std::to_string(tok->vocab_size()) +
                     " ids but the model's vocabulary is " + std::to_string(vocab) +
                     "; give --vocab " + std::to_string(tok->vocab_size()) + " or more");
  auto [data, kind] = read_dataset(file, format, {tok.get(), tokenizer}, jsonl, seq, vocab);
  data.check_vocab(std::size_t(vocab));
  return {std::move(data), std::move(kind), std::move(tok), tokenizer, jsonl};
}

ValidationData load_validation_data(const std::filesystem::path& file, const std::string& format,
                                    const TrainingData& training, int batch, int seq, int vocab,
                                    int max_batches) {
  // Validation rows hold one example each, unshuffled: a packed session reads them with plain
  // positions (the loss is the same).
  const JsonlOptions jsonl{training.jsonl.chat_template, std::nullopt, false};
  auto [data, kind] = read_dataset(
      file, format, {training.tokenizer.get(), training.tokenizer_path}, jsonl, seq, vocab);
  if (kind != training.kind)
    throw UsageError("--val-data " + file.string() + " reads as " + kind + " but --data as " +
                     training.kind + "; give both as text, both as token files or both as JSONL");
  data.check_vocab(std::size_t(vocab));
  // Distinct rows before the data repeats: the examples, or the windows i·T with
  // i·T ≤ n − T − 2 that start before the wrap of the windowing contract; in whole batches, at
  // least one.
  const ExampleRows* examples = data.examples();
  const uint64_t rows = examples ? examples->size() : (data.stream_size() - 2) / uint64_t(seq);
  const uint64_t batches = std::max<uint64_t>(1, rows / uint64_t(batch));
  return {std::move(data), int(std::min<uint64_t>(batches, uint64_t(max_batches)))};
}

}  // namespace remat::cli
