// Dispatch for dequantize_blocks.comp: a row of ggml blocks (GGUF tensor data, a frozen QLoRA
// base weight) decoded to float32 on the device by shaders/gguf_blocks.glsl, bit for bit what
// formats/gguf_blocks.h's decode_blocks writes.
#pragma once

#include <cstdint>
#include <optional>

#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// A block format the GPU decoders read: values and bytes per block. Types are ggml's ids
// (formats/gguf_types.h GgmlType, as a uint32_t: runtime/kernels does not include formats/).
struct GpuBlockLayout {
  uint32_t values;
  uint32_t bytes;
};
// The layout of ggml type `ggml_type`; nullopt where gguf_blocks.glsl does not decode it.
std::optional<GpuBlockLayout> gpu_block_layout(uint32_t ggml_type);

// y[i] = value i of the blocks of type `ggml_type` at the start of `blocks`, for i < count:
// `count` a whole number of blocks, `blocks` reaching the end of the last 4-byte word holding
// their bytes, `y` at least count floats. Each invocation decodes `run` (1, 4, 8 or 16)
// consecutive values through gguf_row_value or gguf_row_run4, 8 or 16: the same floats either
// way.
// std::invalid_argument on an unsupported type, a count of partial blocks or short slices.
Dispatch dequantize_blocks(uint32_t ggml_type, uint32_t count, BufferSlice blocks, BufferSlice y,
                           uint32_t run = 1);

}  // namespace remat::kernels
