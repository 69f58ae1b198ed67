#include "formats/stop_tokens.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "base/json_file.h"
#include "formats/gguf.h"
#include "formats/weight_files.h"
#include "text/chat_template.h"

namespace remat {
namespace {

namespace fs = std::filesystem;

void add_id(const JsonValue& v, const fs::path& file, std::vector<uint32_t>& out) {
  if (v.type != JsonValue::Type::number || v.number < 0 || v.number >= 4294967296.0 ||
      v.number != std::floor(v.number))
    throw std::invalid_argument(file.string() +
                                ": eos_token_id is not a token id or a list of token ids");
  out.push_back(uint32_t(v.number));
}

// eos_token_id of a config.json or generation_config.json; null or absent names none. A file
// there that is a device or FIFO is refused by read_json_file, not skipped.
void add_config_ids(const fs::path& file, std::vector<uint32_t>& out) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return;
  const JsonValue config = read_json_file(file);
  const JsonValue* v = config.find("eos_token_id");
  if (!v || v->type == JsonValue::Type::null) return;
  if (v->type != JsonValue::Type::array) return add_id(*v, file, out);
  for (const JsonValue& id : v->array) add_id(id, file, out);
}

// llama.cpp's end-of-generation ids: eos, and eot where a chat model has one of its own.
void add_gguf_ids(const fs::path& file, std::vector<uint32_t>& out) {
  const GgufFile f = GgufFile::open(file);
  const GgufMetadata& m = f.metadata();
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"})
    if (const std::optional<uint64_t> id = m.uint(key); id && *id <= UINT32_MAX)
      out.push_back(uint32_t(*id));
}

}  // namespace

std::vector<uint32_t> generation_stop_ids(const fs::path& init, const fs::path& tokenizer_path,
                                          const text::Tokenizer& tokenizer) {
  std::vector<uint32_t> out;
  if (fs::is_directory(init)) {
    add_config_ids(init / "config.json", out);
    add_config_ids(init / "generation_config.json", out);
  }
  for (const fs::path& p : {init, tokenizer_path})
    if (names_gguf_file(p) && fs::is_regular_file(p)) add_gguf_ids(p, out);
  if (fs::is_directory(tokenizer_path) && fs::exists(tokenizer_path / "tokenizer_config.json")) {
    const std::string eos = text::read_tokenizer_config(tokenizer_path).options.eos_token;
    if (const auto id = eos.empty() ? std::nullopt : tokenizer.special_id(eos)) out.push_back(*id);
  }
  for (const char* text : kStopTokenTexts)
    if (const auto id = tokenizer.special_id(text)) out.push_back(*id);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace remat
