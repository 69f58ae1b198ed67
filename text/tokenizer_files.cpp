#include "text/tokenizer_files.h"

#include <stdexcept>

#include "base/regular_file.h"
#include "text/hf_tokenizer_json.h"
#include "text/vocab_files.h"

namespace remat::text {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kEndOfText = "<|endoftext|>";

std::vector<SpecialToken> end_of_text_special(const Vocab& vocab) {
  for (const auto& [bytes, id] : vocab)
    if (bytes == kEndOfText) return {SpecialToken{std::string(kEndOfText), id}};
  return {};
}

std::unique_ptr<PreTokenizer> gpt2_pre_tokenizer() {
  auto pre = std::make_unique<PreTokenizer>();
  pre->add_isolating_stage(kGpt2Pattern);
  return pre;
}

std::unique_ptr<Tokenizer> load_vocab_and_merges(const fs::path& vocab_file,
                                                 const fs::path& merges_file) {
  Vocab vocab = read_vocab(vocab_file, read_json(vocab_file), {});
  Merges merges = read_merges_text(merges_file);
  auto specials = end_of_text_special(vocab);
  try {
    return std::make_unique<Tokenizer>(vocab, merges, gpt2_pre_tokenizer(), std::move(specials));
  } catch (const std::invalid_argument& e) {
    fail_file(vocab_file, e.what());
  }
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail_file(path, "no such file or folder");
  const bool folder = fs::is_directory(path, ec);
  if (!folder) require_regular_file(path);  // a device or FIFO: said so, not "not a tokenizer"
  const fs::path dir = folder ? path : path.parent_path();
  const std::string name = folder ? "" : path.filename().string();
  const auto has = [&](const char* file) { return fs::exists(dir / file, ec); };
  if (name == "tokenizer.json" || (folder && has("tokenizer.json")))
    return load_tokenizer_json(dir / "tokenizer.json");
  if (name == "vocab.json" || name == "merges.txt" || (folder && has("vocab.json"))) {
    if (!has("merges.txt")) fail_file(dir, "vocab.json needs merges.txt beside it");
    return load_vocab_and_merges(dir / "vocab.json", dir / "merges.txt");
  }
  if (name == "encoder.json" || name == "vocab.bpe" || (folder && has("encoder.json"))) {
    if (!has("vocab.bpe")) fail_file(dir, "encoder.json needs vocab.bpe beside it");
    return load_vocab_and_merges(dir / "encoder.json", dir / "vocab.bpe");
  }
  if (!folder && path.extension() == ".json") return load_tokenizer_json(path);
  fail_file(path,
            "not a tokenizer: expected tokenizer.json, vocab.json + merges.txt or "
            "encoder.json + vocab.bpe");
}

}  // namespace remat::text
