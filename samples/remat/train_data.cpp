#include "train_data.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "cli_args.h"
#include "text/token_file.h"
#include "text/tokenizer_files.h"

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

// The tokens of `file` under the rules of `format`; `tok` encodes text. Token ids are not yet
// checked against the vocabulary.
std::pair<TokenDataset, std::string> read_dataset(const std::filesystem::path& file,
                                                  const std::string& format, text::Tokenizer* tok,
                                                  int seq, int vocab) {
  const std::string bytes = read_data_file(file);
  const std::string origin = file.string();
  const bool token_file = format == "llmc" || (format == "auto" && text::is_token_file(bytes));
  std::vector<uint32_t> tokens;
  if (token_file) {
    tokens = text::parse_token_file(bytes, origin);
  } else if (format == "u16") {
    tokens = raw_u16(bytes, origin);
  } else if (tok) {
    tokens = tok->encode(bytes);
  } else {
    if (vocab < 256)
      throw UsageError("byte-level data needs --vocab of at least 256, got " +
                       std::to_string(vocab));
    return {TokenDataset::from_bytes(bytes, seq, origin), "bytes"};
  }
  return {TokenDataset::from_tokens(std::move(tokens), seq, origin), "tokens"};
}

}  // namespace

TrainingData load_training_data(const std::filesystem::path& file, const std::string& format,
                                const std::optional<std::string>& tokenizer, int seq, int vocab) {
  static const char* const kFormats[] = {"auto", "bytes", "text", "llmc", "u16"};
  if (std::find(std::begin(kFormats), std::end(kFormats), format) == std::end(kFormats))
    throw UsageError("--data-format must be auto, bytes, text, llmc or u16, got '" + format + "'");
  if (format == "text" && !tokenizer) throw UsageError("--data-format text needs --tokenizer PATH");
  if (format == "bytes" && tokenizer)
    throw UsageError("--data-format bytes trains on bytes; drop --tokenizer or the format");
  std::unique_ptr<text::Tokenizer> tok;
  if (tokenizer) tok = text::load_tokenizer(*tokenizer);
  if (tok && tok->vocab_size() > std::size_t(vocab))
    throw UsageError("the tokenizer has " + std::to_string(tok->vocab_size()) +
                     " ids but the model's vocabulary is " + std::to_string(vocab) +
                     "; give --vocab " + std::to_string(tok->vocab_size()) + " or more");
  auto [data, kind] = read_dataset(file, format, tok.get(), seq, vocab);
  data.check_vocab(std::size_t(vocab));
  return {std::move(data), std::move(kind), std::move(tok)};
}

ValidationData load_validation_data(const std::filesystem::path& file, const std::string& format,
                                    const TrainingData& training, int batch, int seq, int vocab,
                                    int max_batches) {
  auto [data, kind] = read_dataset(file, format, training.tokenizer.get(), seq, vocab);
  if (kind != training.kind)
    throw UsageError("--val-data " + file.string() + " reads as " + kind + " but --data as " +
                     training.kind + "; give both as text or both as token files");
  data.check_vocab(std::size_t(vocab));
  // Windows i·T with i·T ≤ n − T − 2 start before the wrap of the windowing contract: that many
  // distinct, non-overlapping windows, in whole batches (at least one).
  const uint64_t windows = (data.size() - 2) / uint64_t(seq);
  const uint64_t batches = std::max<uint64_t>(1, windows / uint64_t(batch));
  return {std::move(data), int(std::min<uint64_t>(batches, uint64_t(max_batches)))};
}

}  // namespace remat::cli
