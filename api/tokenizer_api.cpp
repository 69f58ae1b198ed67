// remat_tokenizer_*: the tokenizers of text/ (BPE and SentencePiece) behind an opaque handle.
// Outputs use the C idiom of asking for the size first, so an app never guesses a buffer size.
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "api/error_boundary.h"
#include "formats/tokenizer_source.h"

using remat::capi::ApiError;
using remat::capi::guarded;
using remat::capi::invalid;
using remat::capi::require;

struct remat_tokenizer {
  std::unique_ptr<remat::text::Tokenizer> tokenizer;
  // Encoding reuses the tokenizer's caches, so calls from several threads take turns.
  mutable std::mutex mutex;
};

namespace {

const remat_tokenizer& tokenizer_of(const remat_tokenizer* t) {
  require(t != nullptr, "tokenizer is NULL");
  return *t;
}

// The output half of the two-call idiom: `needed` is reported, then copied only when it fits.
template <class T>
void copy_out(const std::vector<T>& values, T* out, size_t capacity, size_t* count,
              const char* out_name, const char* what) {
  *count = values.size();
  if (out == nullptr && capacity > 0)
    invalid(std::string(out_name) + " is NULL with capacity " + std::to_string(capacity));
  if (out == nullptr) return;  // the size query
  if (capacity < values.size())
    invalid(std::string(out_name) + " has room for " + std::to_string(capacity) + " " + what +
            ", the result needs " + std::to_string(values.size()) +
            " (pass NULL and 0 to ask for the size)");
  if (!values.empty()) std::memcpy(out, values.data(), values.size() * sizeof(T));
}

}  // namespace

extern "C" {

remat_status remat_tokenizer_load(const char* path, remat_tokenizer** tokenizer) {
  return guarded([&] {
    require(tokenizer != nullptr, "tokenizer is NULL");
    *tokenizer = nullptr;
    require(path != nullptr, "path is NULL");
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      throw ApiError(REMAT_ERROR_IO, std::string(path) + ": no such file or folder");
    auto t = std::make_unique<remat_tokenizer>();
    t->tokenizer = remat::load_tokenizer_from(path);
    *tokenizer = t.release();
  });
}

void remat_tokenizer_free(remat_tokenizer* tokenizer) {
  delete tokenizer;
}

remat_status remat_tokenizer_vocab_size(const remat_tokenizer* tokenizer, uint32_t* vocab_size) {
  return guarded([&] {
    const remat_tokenizer& t = tokenizer_of(tokenizer);
    require(vocab_size != nullptr, "vocab_size is NULL");
    *vocab_size = static_cast<uint32_t>(t.tokenizer->vocab_size());
  });
}

remat_status remat_tokenizer_encode(remat_tokenizer* tokenizer, const char* text, size_t bytes,
                                    int allow_special, uint32_t* ids, size_t capacity,
                                    size_t* count) {
  return guarded([&] {
    const remat_tokenizer& t = tokenizer_of(tokenizer);
    require(count != nullptr, "count is NULL");
    *count = 0;
    require(text != nullptr || bytes == 0, "text is NULL");
    std::vector<uint32_t> encoded;
    {
      std::lock_guard<std::mutex> lock(t.mutex);
      t.tokenizer->encode(std::string_view(text == nullptr ? "" : text, bytes), allow_special != 0,
                          encoded);
    }
    copy_out(encoded, ids, capacity, count, "ids", "ids");
  });
}

remat_status remat_tokenizer_decode(const remat_tokenizer* tokenizer, const uint32_t* ids,
                                    size_t count, char* out, size_t capacity, size_t* bytes) {
  return guarded([&] {
    const remat_tokenizer& t = tokenizer_of(tokenizer);
    require(bytes != nullptr, "bytes is NULL");
    *bytes = 0;
    require(ids != nullptr || count == 0, "ids is NULL");
    const std::vector<uint32_t> in(ids, ids + count);
    const std::string decoded = t.tokenizer->decode(in);
    copy_out(std::vector<char>(decoded.begin(), decoded.end()), out, capacity, bytes, "out",
             "bytes");
  });
}

}  // extern "C"
