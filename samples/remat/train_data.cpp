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

namespace {

// Trained targets a step of `rows_per_step` rows reads on average over one pass of `rows` rows.
double trained_per_step(const ExampleRows& e, uint64_t rows, int rows_per_step) {
  return double(e.report().trained_targets) * rows_per_step / double(rows);
}

}  // namespace

std::string TrainingRows::packing_summary(int rows_per_step) const {
  const ExampleRows* e = examples();
  if (!e) return "";
  const PackingReport& p = e->packing();
  const auto rows = [&](uint64_t n, double padding, const char* how, bool used) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "%s%s: %llu rows, %.2f examples/row, %.1f%% padding, %.0f trained targets/step",
                  how, used ? " (read)" : "", static_cast<unsigned long long>(n),
                  double(e->size()) / double(n), 100.0 * padding,
                  trained_per_step(*e, n, rows_per_step));
    return std::string(line);
  };
  return rows(p.plain_rows, p.plain_padding(), "one example a row", !e->packed()) + "; " +
         rows(p.packed_rows, p.packed_padding(), "packed", e->packed());
}

void TrainingRows::packing_json(JsonWriter& j, int rows_per_step) const {
  const ExampleRows* e = examples();
  if (!e) {
    j.null();
    return;
  }
  const PackingReport& p = e->packing();
  j.begin_object()
      .field("examples", uint64_t(e->size()))
      .field("trained_targets", e->report().trained_targets)
      .field("packed", e->packed())
      .field("rows_per_step", rows_per_step);
  const auto rows = [&](const char* name, uint64_t n, double padding) {
    j.key(name)
        .begin_object()
        .field("rows", n)
        .field("examples_per_row", double(e->size()) / double(n))
        .field("padding", padding)
        .field("trained_targets_per_step", trained_per_step(*e, n, rows_per_step))
        .end_object();
  };
  rows("one_example_a_row", p.plain_rows, p.plain_padding());
  rows("packed_rows", p.packed_rows, p.packed_padding());
  j.end_object();
}

std::string data_report(const std::filesystem::path& file, const TrainingData& training,
                        int rows_per_step) {
  const char* unit = training.kind == "bytes" ? "byte" : "token";
  char entropy[64];
  std::snprintf(entropy, sizeof entropy, ", unigram entropy %.3f nats/%s",
                training.data.unigram_entropy(), unit);
  std::string out =
      "data     " + file.string() + ": " + training.data.summary(unit) + entropy + "\n";
  if (const std::string p = training.data.packing_summary(rows_per_step); !p.empty())
    out += "rows     " + p + "\n";
  return out;
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
  // Never shuffled; packed (below) like the training rows.
  const JsonlOptions jsonl{training.jsonl.chat_template, std::nullopt, false};
  auto [data, kind] = read_dataset(
      file, format, {training.tokenizer.get(), training.tokenizer_path}, jsonl, seq, vocab);
  if (kind != training.kind)
    throw UsageError("--val-data " + file.string() + " reads as " + kind + " but --data as " +
                     training.kind + "; give both as text, both as token files or both as JSONL");
  data.check_vocab(std::size_t(vocab));
  if (const ExampleRows* examples = data.examples()) {
    ValidationRows rows(*examples, batch, max_batches, training.jsonl.pack);
    const int batches = rows.batches();
    return {std::move(data), std::move(rows), batches};
  }
  // Distinct windows before the data repeats: i·T with i·T ≤ n − T − 2, those that start before
  // the wrap of the windowing contract; in whole batches, at least one.
  const uint64_t batches =
      std::max<uint64_t>(1, (data.stream_size() - 2) / uint64_t(seq) / uint64_t(batch));
  return {std::move(data), std::nullopt, int(std::min<uint64_t>(batches, uint64_t(max_batches)))};
}

Batch ValidationData::batch(int k, int batch_size) const {
  return examples ? examples->batch(k) : data.batch(uint64_t(k), batch_size);
}

std::string ValidationData::packing_summary() const {
  if (!examples || !examples->packed()) return "";
  return "; packed: " + std::to_string(examples->examples()) + " examples in " +
         std::to_string(examples->rows()) + " rows";
}

}  // namespace remat::cli
