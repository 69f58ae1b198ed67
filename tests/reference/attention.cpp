#include "tests/reference/attention.h"

#include <algorithm>
#include <cmath>

namespace remat::ref {

namespace {

// Index helpers into qkv[B,T,3C]: part 0 = q, 1 = k, 2 = v.
struct Layout {
  std::size_t Tn, C, hs;
  std::size_t qkv(std::size_t b, std::size_t t, std::size_t part, std::size_t h,
                  std::size_t d) const {
    return (b * Tn + t) * 3 * C + part * C + h * hs + d;
  }
  std::size_t row(std::size_t b, std::size_t t, std::size_t h, std::size_t d) const {
    return (b * Tn + t) * C + h * hs + d;
  }
};

// The causal probability matrix att[t][s] (s ≤ t; 0 above the diagonal) of one (b, h), and the
// log-sum-exp of each row's scores.
template <class T>
void probabilities(std::vector<double>& att, std::vector<double>& lse, const std::vector<T>& qkv,
                   const Layout& L, std::size_t b, std::size_t h) {
  const double scale = 1.0 / std::sqrt(double(L.hs));
  att.assign(L.Tn * L.Tn, 0.0);
  lse.assign(L.Tn, 0.0);
  for (std::size_t t = 0; t < L.Tn; ++t) {
    double maxval = -INFINITY;
    for (std::size_t s = 0; s <= t; ++s) {
      double dot = 0.0;
      for (std::size_t d = 0; d < L.hs; ++d)
        dot += double(qkv[L.qkv(b, t, 0, h, d)]) * double(qkv[L.qkv(b, s, 1, h, d)]);
      att[t * L.Tn + s] = dot * scale;
      maxval = std::max(maxval, dot * scale);
    }
    double sum = 0.0;
    for (std::size_t s = 0; s <= t; ++s) sum += std::exp(att[t * L.Tn + s] - maxval);
    for (std::size_t s = 0; s <= t; ++s)
      att[t * L.Tn + s] = std::exp(att[t * L.Tn + s] - maxval) / sum;
    lse[t] = maxval + std::log(sum);
  }
}

}  // namespace

template <class T>
void attention_forward(std::vector<T>& out, std::vector<T>& lse, const std::vector<T>& qkv,
                       std::size_t B, std::size_t Tn, std::size_t C, std::size_t NH) {
  const Layout L{Tn, C, C / NH};
  out.assign(B * Tn * C, T(0));
  lse.assign(B * NH * Tn, T(0));
  std::vector<double> att, row_lse;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < NH; ++h) {
      probabilities(att, row_lse, qkv, L, b, h);
      for (std::size_t t = 0; t < Tn; ++t) {
        lse[(b * NH + h) * Tn + t] = T(row_lse[t]);
        for (std::size_t d = 0; d < L.hs; ++d) {
          double acc = 0.0;
          for (std::size_t s = 0; s <= t; ++s)
            acc += att[t * Tn + s] * double(qkv[L.qkv(b, s, 2, h, d)]);
          out[L.row(b, t, h, d)] = T(acc);
        }
      }
    }
}

template <class T>
void attention_backward(std::vector<T>& dqkv, const std::vector<T>& dout, const std::vector<T>& qkv,
                        std::size_t B, std::size_t Tn, std::size_t C, std::size_t NH) {
  const Layout L{Tn, C, C / NH};
  const double scale = 1.0 / std::sqrt(double(L.hs));
  std::vector<double> grad(B * Tn * 3 * C, 0.0);
  std::vector<double> att, row_lse, datt(Tn), dpre(Tn);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < NH; ++h) {
      probabilities(att, row_lse, qkv, L, b, h);
      for (std::size_t t = 0; t < Tn; ++t) {
        // out_t = Σ_s att[t][s] v_s: gradients into att and into v.
        for (std::size_t s = 0; s <= t; ++s) {
          datt[s] = 0.0;
          for (std::size_t d = 0; d < L.hs; ++d) {
            const double g = dout[L.row(b, t, h, d)];
            datt[s] += g * double(qkv[L.qkv(b, s, 2, h, d)]);
            grad[L.qkv(b, s, 2, h, d)] += att[t * Tn + s] * g;
          }
        }
        // Softmax backward: dpre_s = att_s (datt_s − Σ_u att_u datt_u).
        double dot = 0.0;
        for (std::size_t s = 0; s <= t; ++s) dot += att[t * Tn + s] * datt[s];
        for (std::size_t s = 0; s <= t; ++s) dpre[s] = att[t * Tn + s] * (datt[s] - dot);
        // pre_s = scale q_t·k_s: gradients into q and k.
        for (std::size_t s = 0; s <= t; ++s)
          for (std::size_t d = 0; d < L.hs; ++d) {
            grad[L.qkv(b, t, 0, h, d)] += scale * dpre[s] * double(qkv[L.qkv(b, s, 1, h, d)]);
            grad[L.qkv(b, s, 1, h, d)] += scale * dpre[s] * double(qkv[L.qkv(b, t, 0, h, d)]);
          }
      }
    }
  dqkv.assign(grad.size(), T(0));
  for (std::size_t i = 0; i < grad.size(); ++i) dqkv[i] = T(grad[i]);
}

template void attention_forward<float>(std::vector<float>&, std::vector<float>&,
                                       const std::vector<float>&, std::size_t, std::size_t,
                                       std::size_t, std::size_t);
template void attention_forward<double>(std::vector<double>&, std::vector<double>&,
                                        const std::vector<double>&, std::size_t, std::size_t,
                                        std::size_t, std::size_t);
template void attention_backward<float>(std::vector<float>&, const std::vector<float>&,
                                        const std::vector<float>&, std::size_t, std::size_t,
                                        std::size_t, std::size_t);
template void attention_backward<double>(std::vector<double>&, const std::vector<double>&,
                                         const std::vector<double>&, std::size_t, std::size_t,
                                         std::size_t, std::size_t);

}  // namespace remat::ref
