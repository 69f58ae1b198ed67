#include "runtime/lowering_context.h"

namespace remat {

bool has_16bit_kernel(OpKind k) {
  switch (k) {
    case OpKind::layernorm:
    case OpKind::layernorm_backward:
    case OpKind::attention:
    case OpKind::attention_backward:
    case OpKind::gqa_attention:
    case OpKind::gqa_attention_backward:
    case OpKind::gelu:
    case OpKind::gelu_backward:
    case OpKind::residual:
    case OpKind::dropout:
    case OpKind::matmul:
    case OpKind::matmul_backward:
    case OpKind::embedding:
    case OpKind::token_embedding:
    case OpKind::head_loss:
    case OpKind::head_loss_backward:
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_backward:
    case OpKind::rmsnorm:
    case OpKind::rmsnorm_backward:
    case OpKind::rope:
    case OpKind::swiglu:
    case OpKind::swiglu_backward:
      return true;
    default:
      return false;
  }
}

}  // namespace remat
