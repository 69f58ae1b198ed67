// Texel view formats the executor creates views in: the formats kernels read operands through
// (runtime/kernels/kernel_variants.h chooses them from dtypes).
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>

namespace remat {

// Bytes of one texel of a format the kernels read through a view (RGBA32F, R32F, RGBA16F,
// R16F, RGBA16UI, R16UI; RGBA32UI and R32UI for raw words, as ggml blocks); 0 for any other
// format.
uint32_t texel_format_bytes(VkFormat f);

}  // namespace remat
