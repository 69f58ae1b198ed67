#include "tests/reference/optimizer.h"

#include <algorithm>
#include <cmath>

namespace remat::ref {

template <class T>
T grad_norm(const std::vector<std::vector<T>>& grads) {
  double sum = 0.0;
  for (const auto& g : grads)
    for (T x : g) sum += double(x) * double(x);
  return T(std::sqrt(sum));
}

template <class T>
T clip_scale(T norm, T max_norm) {
  if (max_norm <= T(0)) return T(1);
  return std::min(T(1), max_norm / (norm + T(1e-6)));
}

template <class T>
void adamw_step(std::vector<T>& param, const std::vector<T>& grad, std::vector<T>& m,
                std::vector<T>& v, const AdamW& h, int t, T clip, bool decay) {
  // Bias corrections undo the zero initialisation of m and v.
  const double bc1 = 1.0 - std::pow(h.beta1, t);
  const double bc2 = 1.0 - std::pow(h.beta2, t);
  for (std::size_t i = 0; i < param.size(); ++i) {
    const T g = grad[i] * clip;
    // Decoupled weight decay (Loshchilov & Hutter): shrink the weight, independent of the
    // gradient statistics.
    if (decay) param[i] = T(param[i] * (1.0 - h.lr * h.weight_decay));
    m[i] = T(h.beta1 * m[i] + (1.0 - h.beta1) * g);
    v[i] = T(h.beta2 * v[i] + (1.0 - h.beta2) * g * g);
    const double m_hat = m[i] / bc1;
    const double v_hat = v[i] / bc2;
    param[i] = T(param[i] - h.lr * m_hat / (std::sqrt(v_hat) + h.eps));
  }
}

template float grad_norm<float>(const std::vector<std::vector<float>>&);
template double grad_norm<double>(const std::vector<std::vector<double>>&);
template float clip_scale<float>(float, float);
template double clip_scale<double>(double, double);
template void adamw_step<float>(std::vector<float>&, const std::vector<float>&, std::vector<float>&,
                                std::vector<float>&, const AdamW&, int, float, bool);
template void adamw_step<double>(std::vector<double>&, const std::vector<double>&,
                                 std::vector<double>&, std::vector<double>&, const AdamW&, int,
                                 double, bool);

}  // namespace remat::ref
