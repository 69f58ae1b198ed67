#include "runtime/kernels/act_variant.h"

#include <stdexcept>
#include <string>

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
      break;
  }
  throw std::invalid_argument("activations are stored as f32, f16 or bf16, not " +
                              std::string(dtype_name(act)));
}

}  // namespace remat::kernels
