// Floats in a tensor's storage type: the host side of a plan tensor that is not f32 (a frozen
// base stored in f16 or bf16, TrainShape::weight_dtype). Narrowing rounds to nearest, ties to
// even, and widening is exact, bit for bit what the kernels do (base/half_float.h), so a value
// read back from the device is the value a kernel computes with. Staging pieces of such a tensor
// are converted through a bounded scratch of floats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "graph/tensor.h"
#include "runtime/vulkan/staging.h"

namespace remat {

// values[i] stored as `t` into out (out.size() == values.size() * dtype_bytes(t)).
void narrow_floats(std::span<const float> values, DType t, std::span<std::byte> out);
// The floats `in` holds as `t` (in.size() == out.size() * dtype_bytes(t)).
void widen_floats(std::span<const std::byte> in, DType t, std::span<float> out);

// A Staging::Fill for a tensor stored as `t`: `produce(first, out)` writes the tensor's elements
// [first, first + out.size()) as floats.
using ProduceFloats = std::function<void(uint64_t first, std::span<float> out)>;
Staging::Fill fill_floats(DType t, ProduceFloats produce);

// A Staging::Drain for a tensor stored as `t`: `consume(first, values)` gets its elements
// [first, first + values.size()) as floats.
using ConsumeFloats = std::function<void(uint64_t first, std::span<const float> values)>;
Staging::Drain drain_floats(DType t, ConsumeFloats consume);

// The bytes of tensor `t` that hold its elements [first, first + count): for a block tensor
// (DType::blocks, a QLoRA base) the whole blocks covering them. `first_stored` is the element those
// bytes begin with.
struct StoredRange {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t first_stored = 0;
};
StoredRange stored_range(const Tensor& t, uint64_t first, uint64_t count);

// A Staging::Drain for the bytes stored_range gave for `t` (any float dtype or blocks): consume
// gets its elements from range.first_stored on, as floats (blocks decoded as ggml decodes them,
// formats/gguf_blocks.h, the values the kernels compute with).
Staging::Drain drain_values(const Tensor& t, const StoredRange& range, ConsumeFloats consume);

// Elements [first, first + out.size()) of `t`, whose whole storage is `slice`, read back.
void download_values(Staging& staging, const BufferSlice& slice, const Tensor& t, uint64_t first,
                     std::span<float> out);

}  // namespace remat
