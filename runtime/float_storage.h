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

}  // namespace remat
