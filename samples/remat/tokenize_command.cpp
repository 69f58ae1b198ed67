// `remat tokenize` and `remat detokenize`: text to BPE token ids and back, with a GPT-2
// or Hugging Face tokenizer (text/tokenizer_files.h) or the one a GGUF model file carries
// (formats/gguf_tokenizer.h). Token ids are printed whitespace-separated
// or written as an llm.c token file (formats/token_file.h).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "formats/token_file.h"
#include "formats/tokenizer_source.h"
#include "text/chat_examples.h"
#include "text/vocab_files.h"

namespace remat::cli {
namespace {

CommandSpec tokenize_spec() {
  return {
      "tokenize",
      "FILE|-",
      1,
      "Encodes FILE (or standard input) with the tokenizer at PATH: a folder or file of\n"
      "GPT-2's encoder.json + vocab.bpe, Hugging Face's vocab.json + merges.txt, a Hugging Face\n"
      "tokenizer.json (byte-level BPE, or BPE with byte fallback as Gemma and Llama 2 ship it;\n"
      "detokenize then goes through its decoder), or a GGUF model file\n"
      "(M.gguf: its tokenizer.ggml.* keys, byte-level BPE or SentencePiece, as llama.cpp\n"
      "reads them; its user-defined tokens are matched even with --no-special). Prints the\n"
      "token ids separated by spaces, or with --out writes an llm.c token file: a 1024-byte\n"
      "header (magic 20240520, version 1, token count) and uint16 tokens, or for vocabularies\n"
      "over 65536 ids llm.c's uint32 layout (magic 20240801, version 7). Special tokens\n"
      "written in the text (such as <|endoftext|>) become their ids. Any bytes are accepted:\n"
      "invalid UTF-8 is encoded byte by byte (a byte a byte-level GGUF vocabulary has no\n"
      "token for is left out, as llama.cpp leaves it out; a SentencePiece one without it\n"
      "refuses the text).\n"
      "With --jsonl FILE.jsonl instead of FILE, encodes a fine-tuning file as `remat train`\n"
      "reads it: one JSON object per line, {\"text\": ...}, {\"prompt\": ..., \"completion\": "
      "...}\n"
      "or {\"messages\": [{\"role\": ..., \"content\": ...}, ...]} (rendered with the chat\n"
      "template of PATH's tokenizer_config.json, a GGUF file's tokenizer.chat_template, or\n"
      "--chat-template), and prints one line per example, in file order and uncut:\n"
      "{\"ids\": [...], \"mask\": [...]}, mask 1 where the token is trained.\n",
      {{"--tokenizer", "PATH", "tokenizer.json, a folder of GPT-2 or Hugging Face files, or M.gguf",
        ""},
       {"--out", "TOKENS.bin", "write an llm.c token file instead of printing ids", ""},
       {"--no-special", "", "encode special-token text as plain text", ""},
       {"--jsonl", "FILE.jsonl", "print the ids and loss mask of each example of FILE.jsonl", ""},
       {"--chat-template", "FILE", "with --jsonl: this Jinja chat template", "PATH's"}}};
}

CommandSpec detokenize_spec() {
  return {
      "detokenize",
      "[FILE|-]",
      1,
      "Decodes token ids back to the exact bytes they encode, written to standard output. The\n"
      "input (FILE, or standard input when absent or '-') is either whitespace-separated\n"
      "decimal ids, as `remat tokenize` prints them, or an llm.c token file (recognised by its\n"
      "magic number).\n",
      {{"--tokenizer", "PATH", "tokenizer.json, a folder of GPT-2 or Hugging Face files, or M.gguf",
        ""}}};
}

std::string read_input(const std::string& name) {
  if (name != "-") return text::read_file(name);
  std::string data{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  if (std::cin.bad()) throw UsageError("cannot read standard input");
  return data;
}

std::unique_ptr<text::Tokenizer> tokenizer_from(const Args& a) {
  const auto path = a.get("--tokenizer");
  if (!path)
    throw UsageError(
        "--tokenizer PATH is required (a tokenizer.json, a folder of GPT-2/HF files, or M.gguf)");
  return load_tokenizer_from(*path);
}

void write_ids(const std::vector<text::TokenId>& ids) {
  std::string line;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
    if (line.size() > (1 << 16)) {
      std::fwrite(line.data(), 1, line.size(), stdout);
      line.clear();
    }
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
}

// Whitespace-separated decimal ids; anything else is an error naming its position.
std::vector<text::TokenId> parse_ids(const std::string& input, const std::string& origin) {
  std::vector<text::TokenId> ids;
  std::istringstream in(input);
  std::string word;
  while (in >> word) {
    std::size_t used = 0;
    unsigned long long v = 0;
    bool ok = !word.empty() && word.find_first_not_of("0123456789") == std::string::npos;
    if (ok) {
      try {
        v = std::stoull(word, &used);
      } catch (const std::out_of_range&) {
        ok = false;
      }
    }
    if (!ok || v > UINT32_MAX)
      throw UsageError(origin + ": token " + std::to_string(ids.size()) + " '" +
                       word.substr(0, 40) + "' is not a token id (a decimal integer)");
    ids.push_back(text::TokenId(v));
  }
  return ids;
}

// One {"ids": [...], "mask": [...]} line per example.
void write_masked(const std::vector<text::MaskedTokens>& examples) {
  for (const text::MaskedTokens& e : examples) {
    std::string line = "{\"ids\":[";
    for (std::size_t i = 0; i < e.ids.size(); ++i)
      line += (i ? "," : "") + std::to_string(e.ids[i]);
    line += "],\"mask\":[";
    for (std::size_t i = 0; i < e.mask.size(); ++i) {
      if (i) line += ',';
      line += e.mask[i] ? '1' : '0';
    }
    line += "]}\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
}

int run_tokenize_jsonl(const Args& a, const std::string& jsonl) {
  if (!a.positionals().empty())
    throw UsageError("give a text FILE or --jsonl FILE.jsonl, not both");
  if (a.has("--out") || a.has("--no-special"))
    throw UsageError("--jsonl prints ids and masks; it takes neither --out nor --no-special");
  auto tokenizer = tokenizer_from(a);
  std::optional<std::filesystem::path> chat_template;
  if (const auto t = a.get("--chat-template")) chat_template = *t;
  auto examples = chat_examples_from(*tokenizer, *a.get("--tokenizer"), chat_template);
  write_masked(examples.encode_file(jsonl));
  return 0;
}

}  // namespace

int run_tokenize(const std::vector<std::string>& argv) {
  if (print_help_if_requested(argv, tokenize_spec())) return 0;
  Args a(argv, tokenize_spec());
  if (const auto jsonl = a.get("--jsonl")) return run_tokenize_jsonl(a, *jsonl);
  if (a.has("--chat-template")) throw UsageError("--chat-template goes with --jsonl FILE.jsonl");
  if (a.positionals().empty())
    throw UsageError("no input: give a text FILE, - for standard input, or --jsonl FILE.jsonl");
  const std::string file = a.positionals()[0];
  auto tokenizer = tokenizer_from(a);
  const std::string input = read_input(file);
  const auto ids = tokenizer->encode(input, !a.has("--no-special"));
  if (const auto out = a.get("--out")) {
    write_token_file(*out, ids, tokenizer->vocab_size());
    std::printf("%zu bytes -> %zu tokens (%.2f bytes/token) written to %s\n", input.size(),
                ids.size(), ids.empty() ? 0.0 : double(input.size()) / double(ids.size()),
                out->c_str());
  } else {
    write_ids(ids);
  }
  return 0;
}

int run_detokenize(const std::vector<std::string>& argv) {
  if (print_help_if_requested(argv, detokenize_spec())) return 0;
  Args a(argv, detokenize_spec());
  auto tokenizer = tokenizer_from(a);
  const std::string file = a.positionals().empty() ? "-" : a.positionals()[0];
  const std::string input = read_input(file);
  const std::string origin = file == "-" ? "standard input" : file;
  const auto ids =
      is_token_file(input) ? parse_token_file(input, origin) : parse_ids(input, origin);
  const std::string bytes = tokenizer->decode(ids);
  std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  return 0;
}

}  // namespace remat::cli
