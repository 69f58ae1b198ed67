#include "graph/op.h"

#include <array>
#include <utility>

namespace remat {
namespace {

constexpr std::array<std::pair<OpKind, std::string_view>, 43> kNames = {{
    {OpKind::embedding, "embedding"},
    {OpKind::embedding_backward, "embedding_backward"},
    {OpKind::layernorm, "layernorm"},
    {OpKind::layernorm_backward, "layernorm_backward"},
    {OpKind::matmul, "matmul"},
    {OpKind::matmul_backward, "matmul_backward"},
    {OpKind::attention, "attention"},
    {OpKind::attention_backward, "attention_backward"},
    {OpKind::gelu, "gelu"},
    {OpKind::gelu_backward, "gelu_backward"},
    {OpKind::residual, "residual"},
    {OpKind::residual_backward, "residual_backward"},
    {OpKind::dropout, "dropout"},
    {OpKind::dropout_backward, "dropout_backward"},
    {OpKind::cross_entropy, "cross_entropy"},
    {OpKind::cross_entropy_backward, "cross_entropy_backward"},
    {OpKind::token_embedding, "token_embedding"},
    {OpKind::token_embedding_backward, "token_embedding_backward"},
    {OpKind::rmsnorm, "rmsnorm"},
    {OpKind::rmsnorm_backward, "rmsnorm_backward"},
    {OpKind::rope, "rope"},
    {OpKind::rope_backward, "rope_backward"},
    {OpKind::gqa_attention, "gqa_attention"},
    {OpKind::gqa_attention_backward, "gqa_attention_backward"},
    {OpKind::swiglu, "swiglu"},
    {OpKind::swiglu_backward, "swiglu_backward"},
    {OpKind::head_loss, "head_loss"},
    {OpKind::head_loss_backward, "head_loss_backward"},
    {OpKind::grad_norm, "grad_norm"},
    {OpKind::adamw, "adamw"},
    {OpKind::causal_conv1d, "causal_conv1d"},
    {OpKind::causal_conv1d_backward, "causal_conv1d_backward"},
    {OpKind::l2norm, "l2norm"},
    {OpKind::l2norm_backward, "l2norm_backward"},
    {OpKind::gdn_gates, "gdn_gates"},
    {OpKind::gdn_gates_backward, "gdn_gates_backward"},
    {OpKind::gated_rmsnorm, "gated_rmsnorm"},
    {OpKind::gated_rmsnorm_backward, "gated_rmsnorm_backward"},
    {OpKind::sigmoid_gate, "sigmoid_gate"},
    {OpKind::sigmoid_gate_backward, "sigmoid_gate_backward"},
    {OpKind::gated_delta_state, "gated_delta_state"},
    {OpKind::gated_delta_rule, "gated_delta_rule"},
    {OpKind::gated_delta_rule_backward, "gated_delta_rule_backward"},
}};

}  // namespace

std::string_view op_kind_name(OpKind k) {
  for (const auto& [kind, name] : kNames)
    if (kind == k) return name;
  return "?";
}

bool parse_op_kind(std::string_view name, OpKind* out) {
  for (const auto& [kind, n] : kNames)
    if (n == name) {
      *out = kind;
      return true;
    }
  return false;
}

bool is_backward_kind(OpKind k) {
  return op_kind_name(k).ends_with("_backward");
}

}  // namespace remat
