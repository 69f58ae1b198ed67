// Whether a LoRA session keeps its frozen base's quantized matrices in their ggml blocks on the
// device (QLoRA: TrainShape::block_weights, graph/weight_dtype.h) or decodes them to
// TrainShape::weight_dtype. One decision, so that every front end defaults alike: `remat train`
// and `remat plan` (--init M.gguf --lora R, --base-blocks yes|no) and the C API
// (remat_session_params' quantized_base, which remat_session_params_from_file sets for a .gguf
// file, and base_blocks).
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include "graph/lora.h"
#include "graph/model_config.h"

namespace remat {

enum class BaseBlocks {
  automatic,  // nothing asked: keep them where a choice applies (below)
  keep,       // asked to keep them
  decode,     // asked to decode them (--base-blocks no)
};

// Whether the choice applies: LoRA freezes a base whose weights come from a .gguf file. Full
// fine-tuning trains every weight in f32, and other files hold no ggml blocks.
bool base_blocks_apply(const std::optional<std::filesystem::path>& base, const LoraSpec& lora);

// The matrices a session of `lora` on the weights of `base` (the file it loads, if any) keeps in
// their blocks: where the choice applies and `choice` is not decode, every matrix of the file
// stored in a block type (GgufWeights::block_weights: none for an f32, f16 or bf16 file); else
// none. Keeping is the default because QLoRA's point is the quantized file's bytes: a 4-bit base
// decoded to f32 takes eight times the memory. An explicit keep or decode where the choice does
// not apply is std::invalid_argument (a caller naming its own flags checks base_blocks_apply
// first); an unreadable file is WeightFiles::open's error.
std::vector<BlockWeight> base_block_weights(const std::optional<std::filesystem::path>& base,
                                            const LoraSpec& lora, BaseBlocks choice);

}  // namespace remat
