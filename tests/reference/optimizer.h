// Plain references for the optimizer step: the global gradient norm with PyTorch's clipping
// rule, and one AdamW step (torch.optim.AdamW semantics), written for clarity.
#pragma once

#include <cstddef>
#include <vector>

namespace remat::ref {

struct AdamW {
  double lr, beta1, beta2, eps, weight_decay;
};

// sqrt(Σ over all tensors of Σ g²), summed in double.
template <class T>
T grad_norm(const std::vector<std::vector<T>>& grads);

// torch.nn.utils.clip_grad_norm_: gradients are multiplied by min(1, max_norm / (norm + 1e-6));
// max_norm 0 means no clipping.
template <class T>
T clip_scale(T norm, T max_norm);

// One AdamW step at step `t` (from 1), in place. The gradient is multiplied by `clip` first;
// weight decay applies only when `decay` (2-D tensors).
template <class T>
void adamw_step(std::vector<T>& param, const std::vector<T>& grad, std::vector<T>& m,
                std::vector<T>& v, const AdamW& h, int t, T clip, bool decay);

}  // namespace remat::ref
