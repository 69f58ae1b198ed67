// The dequantize_blocks dispatch: checks, and the block layouts of the types gguf_blocks.glsl
// decodes (tests/kernels/dequantize_blocks_test.cpp compares them with formats/gguf_types.h).
#include "runtime/kernels/dequantize_blocks.h"

#include <array>
#include <stdexcept>
#include <string>

#include "dequantize_blocks_params.h"
#include "gguf_block_ids.h"

namespace remat::kernels {

namespace {

constexpr uint32_t kGroup = 256;

struct Layout {
  uint32_t type;
  GpuBlockLayout layout;
};

constexpr std::array kLayouts = {
    Layout{REMAT_GGUF_F32, {1, 4}},      Layout{REMAT_GGUF_F16, {1, 2}},
    Layout{REMAT_GGUF_BF16, {1, 2}},     Layout{REMAT_GGUF_Q8_0, {32, 34}},
    Layout{REMAT_GGUF_Q4_0, {32, 18}},   Layout{REMAT_GGUF_Q4_1, {32, 20}},
    Layout{REMAT_GGUF_Q5_0, {32, 22}},   Layout{REMAT_GGUF_Q5_1, {32, 24}},
    Layout{REMAT_GGUF_Q2_K, {256, 84}},  Layout{REMAT_GGUF_Q3_K, {256, 110}},
    Layout{REMAT_GGUF_Q4_K, {256, 144}}, Layout{REMAT_GGUF_Q5_K, {256, 176}},
    Layout{REMAT_GGUF_Q6_K, {256, 210}},
};

}  // namespace

std::optional<GpuBlockLayout> gpu_block_layout(uint32_t ggml_type) {
  for (const Layout& l : kLayouts)
    if (l.type == ggml_type) return l.layout;
  return std::nullopt;
}

Dispatch dequantize_blocks(uint32_t ggml_type, uint32_t count, BufferSlice blocks, BufferSlice y,
                           uint32_t run) {
  const std::string who = "dequantize_blocks (ggml type " + std::to_string(ggml_type) + ")";
  const std::optional<GpuBlockLayout> layout = gpu_block_layout(ggml_type);
  if (!layout) throw std::invalid_argument(who + ": not a block format the GPU decodes");
  if (count % layout->values != 0)
    throw std::invalid_argument(who + ": " + std::to_string(count) +
                                " values are not whole blocks of " +
                                std::to_string(layout->values));
  if (run != 1 && run != 4 && run != 8 && run != 16)
    throw std::invalid_argument(who + ": runs are 1, 4, 8 or 16 values, not " +
                                std::to_string(run));
  const uint64_t bytes = uint64_t(count) / layout->values * layout->bytes;
  const uint64_t words = (bytes + 3) / 4 * 4;
  if (blocks.size < words)
    throw std::invalid_argument(who + ": " + std::to_string(count) + " values take " +
                                std::to_string(words) + " bytes in whole words, the slice holds " +
                                std::to_string(blocks.size));
  if (y.size < uint64_t(count) * sizeof(float))
    throw std::invalid_argument(who + ": the output slice holds fewer than " +
                                std::to_string(count) + " floats");
  Dispatch d;
  d.kernel = KernelId::dequantize_blocks;
  d.spec = {kGroup, 1, 1, ggml_type};
  d.bindings = {{blocks, false}, {y, true}};
  d.push = push_bytes(push::DequantizeBlocksParams{count, run});
  d.groups = {grid_stride_groups((uint64_t(count) + run - 1) / run, kGroup), 1, 1};
  d.label = "dequantize_blocks";
  return d;
}

}  // namespace remat::kernels
