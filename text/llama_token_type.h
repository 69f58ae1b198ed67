// llama.cpp's enum llama_token_type, the values of tokenizer.ggml.token_type: SentencePiece's own
// piece types (sentencepiece_model.proto, ModelProto.SentencePiece.Type) with 0 for undefined.
#pragma once

#include <cstdint>

namespace remat::text {

enum class LlamaTokenType : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

}  // namespace remat::text
