// `remat generate`: continues a prompt with a checkpoint, text in and text out through a BPE
// tokenizer (byte-level, or character-level with its tokenizer.json decoder), printing each token
// as it is produced.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "device_args.h"
#include "formats/hf_folder.h"
#include "formats/stop_tokens.h"
#include "formats/tokenizer_source.h"
#include "graph/model_builder.h"
#include "runtime/session.h"
#include "runtime/vulkan/device.h"

namespace remat::cli {
namespace {

CommandSpec spec() {
  return {
      "generate",
      "",
      0,
      "Encodes TEXT with the tokenizer (special tokens such as <|endoftext|> included), then\n"
      "samples more tokens from the checkpoint, printing the prompt and each token as it comes.\n"
      "Stops early at the model's end tokens: eos_token_id of the folder's config.json and\n"
      "generation_config.json, a GGUF file's eos and eot ids, the tokenizer's eos_token, and the\n"
      "special tokens <|endoftext|>, <|end_of_text|>, <|eot_id|>, <eos>, <end_of_turn> and\n"
      "<|im_end|> where the tokenizer has them. Reports tokens/s on standard error.\n"
      "Deterministic for a seed.\n",
      {{"--init", "PATH",
        "a Hugging Face model folder, or a .safetensors file: GPT-2, or with --model any family "
        "(required)",
        ""},
       {"--model", "NAME", "the preset the weights are (a Llama-family .safetensors file needs it)",
        "read from the checkpoint"},
       {"--tokenizer", "PATH", "tokenizer.json, or a folder of GPT-2 or Hugging Face files", ""},
       {"--prompt", "TEXT", "the text to continue (required)", ""},
       {"--tokens", "N", "tokens to generate at most", "64"},
       {"--temperature", "T", "sampling temperature; 0 picks the most likely token", "1"},
       {"--top-k", "K", "sample among the K most likely tokens; 0: all", "0"},
       {"--seed", "S", "sampling seed", "0"},
       {"--seq", "T", "the model sees the last T tokens", "the smaller of ctx and 256"},
       {"--heads", "H", "attention heads, when the checkpoint's shapes cannot tell", ""},
       device_profile_flag()}};
}

struct Options {
  std::string init, tokenizer, prompt;
  int tokens = 64, top_k = 0, seq = 0;
  double temperature = 1.0;
  uint64_t seed = 0;
  std::optional<int> heads;
  std::optional<std::string> model;
  std::string device_profile;
};

Options parse(const std::vector<std::string>& argv) {
  Args a(argv, spec());
  Options o;
  for (auto [flag, field] :
       {std::pair{"--init", &o.init}, {"--tokenizer", &o.tokenizer}, {"--prompt", &o.prompt}}) {
    const auto v = a.get(flag);
    if (!v) throw UsageError(std::string(flag) + " is required; see --help");
    *field = *v;
  }
  if (o.prompt.empty()) throw UsageError("--prompt must not be empty");
  o.device_profile = device_profile_arg(a);
  o.tokens = int(a.get_int_or_default("--tokens", 1, 1000000));
  o.top_k = int(a.get_int_or_default("--top-k", 0, INT32_MAX));
  o.seq = int(a.get_int("--seq", 1, 1 << 20).value_or(0));
  o.seed = uint64_t(a.get_int_or_default("--seed", 0, INT64_MAX));
  if (auto h = a.get_int("--heads", 1, 1 << 20)) o.heads = int(*h);
  o.model = a.get("--model");
  if (o.model && o.heads) throw UsageError("--heads is for GPT-2 checkpoints without --model");
  o.temperature = a.get_double_or_default("--temperature");
  if (o.temperature < 0) throw UsageError("--temperature must be at least 0");
  return o;
}

// Prints what each new token adds to the text. A byte-level token is its bytes; through a
// tokenizer.json decoder (character-level BPE) a token's text depends on its neighbours (runs of
// byte tokens, the first token's space), so the whole context is decoded and its new end printed.
class TokenPrinter {
 public:
  TokenPrinter(const text::Tokenizer& tokenizer, const std::vector<uint32_t>& prompt)
      : tokenizer_(tokenizer),
        ids_(prompt),
        shown_(tokenizer.has_decoder() ? tokenizer.decode(prompt) : "") {}

  // An id past the tokenizer's (a model's padded vocabulary) prints nothing.
  void print(uint32_t id) {
    const auto bytes = tokenizer_.token_bytes(id);
    if (!bytes) return;
    if (!tokenizer_.has_decoder()) {
      std::fwrite(bytes->data(), 1, bytes->size(), stdout);
    } else {
      ids_.push_back(id);
      std::string all = tokenizer_.decode(ids_);
      if (all.rfind(shown_, 0) == 0) {
        std::fwrite(all.data() + shown_.size(), 1, all.size() - shown_.size(), stdout);
        shown_ = std::move(all);
      }
    }
    std::fflush(stdout);
  }

 private:
  const text::Tokenizer& tokenizer_;
  std::vector<uint32_t> ids_;  // the prompt and the printable generated ids
  std::string shown_;          // their decoded text printed so far
};

}  // namespace

int run_generate(const std::vector<std::string>& argv) {
  if (print_help_if_requested(argv, spec())) return 0;
  const Options o = parse(argv);
  SessionConfig cfg;
  cfg.model = o.model ? ModelConfig::preset(*o.model) : checkpoint_model(o.init, o.heads);
  auto tokenizer = load_tokenizer_from(o.tokenizer);
  const std::vector<uint32_t> prompt = tokenizer->encode(o.prompt);
  if (tokenizer->vocab_size() > std::size_t(cfg.model.vocab))
    throw UsageError("the tokenizer has " + std::to_string(tokenizer->vocab_size()) + " ids but " +
                     o.init + " has a vocabulary of " + std::to_string(cfg.model.vocab));
  cfg.shape.batch = 1;
  cfg.shape.seq = o.seq ? o.seq : std::min(cfg.model.ctx, 256);
  if (cfg.shape.seq > cfg.model.ctx)
    throw UsageError("--seq " + std::to_string(cfg.shape.seq) + " exceeds the model's context " +
                     std::to_string(cfg.model.ctx));
  cfg.seed = o.seed;
  auto device = open_device(o.device_profile);
  Session session(*device, cfg);
  session.load(o.init);

  const std::vector<uint32_t> stops = generation_stop_ids(o.init, o.tokenizer, *tokenizer);
  std::vector<uint32_t> context = prompt;
  TokenPrinter printer(*tokenizer, prompt);
  std::fwrite(o.prompt.data(), 1, o.prompt.size(), stdout);
  const auto start = std::chrono::steady_clock::now();
  int produced = 0;
  // One token per call, so each is printed as soon as it exists; the seed advances per token.
  while (produced < o.tokens) {
    const uint32_t next =
        session.sample(context, 1, o.seed + uint64_t(produced), float(o.temperature), o.top_k)[0];
    ++produced;
    if (std::binary_search(stops.begin(), stops.end(), next)) break;
    printer.print(next);
    context.push_back(next);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n");
  std::fprintf(stderr, "generated %d tokens in %.2f s: %.2f tokens/s\n", produced, s, produced / s);
  return 0;
}

}  // namespace remat::cli
