#include "formats/base_blocks.h"

#include <stdexcept>

#include "formats/gguf_model.h"
#include "formats/weight_files.h"

namespace remat {

bool base_blocks_apply(const std::optional<std::filesystem::path>& base, const LoraSpec& lora) {
  return base && lora.enabled() && names_gguf_file(*base);
}

std::vector<BlockWeight> base_block_weights(const std::optional<std::filesystem::path>& base,
                                            const LoraSpec& lora, BaseBlocks choice) {
  const bool apply = base_blocks_apply(base, lora);
  if (choice != BaseBlocks::automatic && !apply)
    throw std::invalid_argument(
        "keeping or decoding a base's quantized blocks is a choice for LoRA on a .gguf model "
        "file");
  if (!apply || choice == BaseBlocks::decode) return {};
  return WeightFiles::open(*base).gguf()->block_weights();
}

}  // namespace remat
