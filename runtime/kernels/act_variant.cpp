#include "runtime/kernels/act_variant.h"

#include <stdexcept>
#include <string>

#include "round_params.h"

namespace remat::kernels {

KernelId act_variant(DType act, const ActVariants& v) {
  switch (act) {
    case DType::f32:
      return v.f32;
    case DType::f16:
      return v.f16;
    case DType::bf16:
      return v.bf16;
    case DType::u32:
    case DType::blocks:
      break;
  }
  throw std::invalid_argument("activations are stored as f32, f16 or bf16, not " +
                              std::string(dtype_name(act)));
}

Dispatch round_to_act(uint32_t count, BufferSlice x, DType act) {
  constexpr uint32_t kGroup = 256;
  Dispatch d;
  d.kernel = act_variant(
      act, {KernelId::round_act_f16, KernelId::round_act_f16, KernelId::round_act_bf16});
  if (act == DType::f32) throw std::logic_error("round_to_act: f32 needs no rounding");
  d.spec = {kGroup};
  d.bindings = {{x, true}};
  d.push = push_bytes(push::RoundParams{count});
  d.groups = {grid_stride_groups(count, kGroup), 1, 1};
  d.label = "round_to_act";
  return d;
}

}  // namespace remat::kernels
