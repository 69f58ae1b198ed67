#include "data_args.h"

#include <cstdint>

#include "formats/gguf_tokenizer.h"
#include "formats/weight_files.h"

namespace remat::cli {

std::vector<FlagSpec> data_flags(const std::string& data_help) {
  return {
      {"--data", "FILE", data_help, ""},
      {"--tokenizer", "PATH", "encode --data with this BPE tokenizer",
       "the tokenizer of a .gguf --init"},
      {"--data-format", "F", "auto, bytes, text or jsonl (with --tokenizer), llmc or u16", "auto"},
      {"--chat-template", "FILE", "render JSONL conversations with this Jinja template",
       "the tokenizer's"},
      {"--shuffle", "SEED", "read JSONL examples in a per-epoch permutation of this seed", ""},
      {"--pack", "", "pack several JSONL examples into each row (first fit)", ""},
  };
}

DataOptions parse_data_flags(const Args& a, const std::optional<std::filesystem::path>& init) {
  DataOptions o;
  if (auto d = a.get("--data")) o.data = *d;
  o.tokenizer = a.get("--tokenizer");
  o.format = a.get_or_default("--data-format");
  if (!o.data)
    for (const char* flag : {"--tokenizer", "--data-format", "--chat-template", "--shuffle"})
      if (a.has(flag)) throw UsageError(std::string(flag) + " reads --data; give --data FILE");
  // A GGUF model's tokenizer and chat template read --data unless replaced.
  if (o.data && !o.tokenizer && init && names_gguf_file(*init) && o.format != "bytes" &&
      gguf_has_tokenizer(*init))
    o.tokenizer = init->string();
  if (auto t = a.get("--chat-template")) o.jsonl.chat_template = *t;
  if (auto seed = a.get_int("--shuffle", 0, INT64_MAX)) o.jsonl.shuffle = uint64_t(*seed);
  o.jsonl.pack = a.has("--pack");
  return o;
}

}  // namespace remat::cli
