#include "train_data.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "cli_args.h"
#include "formats/tokenizer_source.h"

namespace remat::cli {

namespace {

// The tokenizer and where it was read from (its folder holds the chat template).
struct TokenizerUse {
  text::Tokenizer* tokenizer = nullptr;
  std::optional<std::string> path;
};

DataFormat format_of(const std::string& name) {
  if (name == "bytes") return DataFormat::bytes;
  if (name == "text") return DataFormat::text;
  if (name == "llmc") return DataFormat::llmc;
  if (name == "u16") return DataFormat::u16;
  if (name == "jsonl") return DataFormat::jsonl;
  return DataFormat::automatic;  // load_training_data has refused any other name
}

bool is_jsonl(const std::filesystem::path& file, const std::string& format) {
  return reads_as_jsonl(file, format_of(format));
}

// The rows of `file` under the rules of `format`. Token ids are not yet checked against the
// vocabulary.
std::pair<TrainingRows, std::string> read_dataset(const std::filesystem::path& file,
                                                  const std::string& format,
                                                  const TokenizerUse& use,
                                                  const JsonlOptions& jsonl, int seq, int vocab) {
  if (is_jsonl(file, format)) {
    if (!use.tokenizer) throw UsageError(file.string() + ": JSONL examples need --tokenizer PATH");
    TrainingRows rows = read_example_rows(file, *use.tokenizer, *use.path, jsonl, seq);
    return {std::move(rows), "examples"};
  }
  TokenStream stream = read_token_stream(file, format_of(format), use.tokenizer);
  if (stream.bytes && vocab < 256)
    throw UsageError("byte-level data needs --vocab of at least 256, got " + std::to_string(vocab));
  TrainingRows rows = TrainingRows::of_stream(std::move(stream), seq);
  const std::string kind = rows.kind();
  return {std::move(rows), kind};
}

// Trained targets a step of `rows_per_step` rows reads on average over one pass of `rows` rows.
double trained_per_step(const ExampleRows& e, uint64_t rows, int rows_per_step) {
  return double(e.report().trained_targets) * rows_per_step / double(rows);
}

}  // namespace

std::string packing_summary(const TrainingRows& training_rows, int rows_per_step) {
  const ExampleRows* e = training_rows.examples();
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

void packing_json(JsonWriter& j, const TrainingRows& training_rows, int rows_per_step) {
  const ExampleRows* e = training_rows.examples();
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
      "data     " + file.string() + ": " + rows_summary(training.data, unit) + entropy + "\n";
  if (const std::string p = packing_summary(training.data, rows_per_step); !p.empty())
    out += "rows     " + p + "\n";
  return out;
}

std::string rows_summary(const TrainingRows& rows, const char* unit) {
  if (const TokenDataset* stream = rows.stream())
    return std::to_string(stream->size()) + " " + unit + "s";
  const ExampleRowsReport& r = rows.examples()->report();
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
