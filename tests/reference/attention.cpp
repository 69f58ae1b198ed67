#include "tests/reference/attention.h"

#include <algorithm>
#include <cmath>

namespace remat::ref {

namespace {

// Where the heads of one operand lie: row (b, t) at (b T + t) * stride, head 0 at column offset.
struct Heads {
  std::size_t stride, offset;
};

// Index helpers for q, k, v (fused or separate) and the compact out/dout rows.
struct Layout {
  std::size_t Tn, NH, KV, hs;
  Heads q, k, v;
  std::size_t at(const Heads& x, std::size_t b, std::size_t t, std::size_t h, std::size_t d) const {
    return (b * Tn + t) * x.stride + x.offset + h * hs + d;
  }
  std::size_t row(std::size_t b, std::size_t t, std::size_t h, std::size_t d) const {
    return (b * Tn + t) * NH * hs + h * hs + d;
  }
  std::size_t kv_head(std::size_t h) const { return h / (NH / KV); }
  const std::vector<uint32_t>* positions = nullptr;  // packed rows, or none
  std::size_t window = 0;                            // sliding window, or 0: all keys
  double scale = 0.0;                                // score scale, or 0: 1/√hs
  // The first key query t of row b sees: where its example starts, or its window if later.
  std::size_t first_key(std::size_t b, std::size_t t) const {
    const std::size_t example = positions && !positions->empty() ? t - (*positions)[b * Tn + t] : 0;
    const std::size_t in_window = window != 0 && t + 1 > window ? t + 1 - window : 0;
    return std::max(example, in_window);
  }
  double score_scale() const { return scale != 0.0 ? scale : 1.0 / std::sqrt(double(hs)); }
};

Layout fused(std::size_t Tn, std::size_t C, std::size_t NH, const std::vector<uint32_t>& pos,
             const Masking& m) {
  return {Tn, NH, NH, C / NH, {3 * C, 0}, {3 * C, C}, {3 * C, 2 * C}, &pos, m.window, m.scale};
}
Layout separate(const GqaDims& n, const std::vector<uint32_t>& pos) {
  return {n.T,  n.NH,     n.KV,   n.D, {n.NH * n.D, 0}, {n.KV * n.D, 0}, {n.KV * n.D, 0},
          &pos, n.window, n.scale};
}

// The causal probability matrix att[t][s] (first_key(t) ≤ s ≤ t; 0 elsewhere) of query head h of
// batch b, and the log-sum-exp of each row's scores.
template <class T>
void probabilities(std::vector<double>& att, std::vector<double>& lse, const T* q, const T* k,
                   const Layout& L, std::size_t b, std::size_t h) {
  const double scale = L.score_scale();
  const std::size_t g = L.kv_head(h);
  att.assign(L.Tn * L.Tn, 0.0);
  lse.assign(L.Tn, 0.0);
  for (std::size_t t = 0; t < L.Tn; ++t) {
    const std::size_t s0 = L.first_key(b, t);
    double maxval = -INFINITY;
    for (std::size_t s = s0; s <= t; ++s) {
      double dot = 0.0;
      for (std::size_t d = 0; d < L.hs; ++d)
        dot += double(q[L.at(L.q, b, t, h, d)]) * double(k[L.at(L.k, b, s, g, d)]);
      att[t * L.Tn + s] = dot * scale;
      maxval = std::max(maxval, dot * scale);
    }
    double sum = 0.0;
    for (std::size_t s = s0; s <= t; ++s) sum += std::exp(att[t * L.Tn + s] - maxval);
    for (std::size_t s = s0; s <= t; ++s)
      att[t * L.Tn + s] = std::exp(att[t * L.Tn + s] - maxval) / sum;
    lse[t] = maxval + std::log(sum);
  }
}

template <class T>
void forward(std::vector<T>& out, std::vector<T>& lse, const T* q, const T* k, const T* v,
             const Layout& L, std::size_t B) {
  const std::size_t Tn = L.Tn;
  out.assign(B * Tn * L.NH * L.hs, T(0));
  lse.assign(B * L.NH * Tn, T(0));
  std::vector<double> att, row_lse;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < L.NH; ++h) {
      probabilities(att, row_lse, q, k, L, b, h);
      for (std::size_t t = 0; t < Tn; ++t) {
        lse[(b * L.NH + h) * Tn + t] = T(row_lse[t]);
        for (std::size_t d = 0; d < L.hs; ++d) {
          double acc = 0.0;
          for (std::size_t s = 0; s <= t; ++s)
            acc += att[t * Tn + s] * double(v[L.at(L.v, b, s, L.kv_head(h), d)]);
          out[L.row(b, t, h, d)] = T(acc);
        }
      }
    }
}

// Adds the gradients into gq, gk, gv (laid out like q, k, v; the same array for a fused qkv).
template <class T>
void backward(double* gq, double* gk, double* gv, const std::vector<T>& dout, const T* q,
              const T* k, const T* v, const Layout& L, std::size_t B) {
  const std::size_t Tn = L.Tn;
  const double scale = L.score_scale();
  std::vector<double> att, row_lse, datt(Tn), dpre(Tn);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < L.NH; ++h) {
      const std::size_t g = L.kv_head(h);
      probabilities(att, row_lse, q, k, L, b, h);
      for (std::size_t t = 0; t < Tn; ++t) {
        // out_t = Σ_s att[t][s] v_s: gradients into att and into v.
        for (std::size_t s = 0; s <= t; ++s) {
          datt[s] = 0.0;
          for (std::size_t d = 0; d < L.hs; ++d) {
            const double dy = dout[L.row(b, t, h, d)];
            datt[s] += dy * double(v[L.at(L.v, b, s, g, d)]);
            gv[L.at(L.v, b, s, g, d)] += att[t * Tn + s] * dy;
          }
        }
        // Softmax backward: dpre_s = att_s (datt_s − Σ_u att_u datt_u).
        double dot = 0.0;
        for (std::size_t s = 0; s <= t; ++s) dot += att[t * Tn + s] * datt[s];
        for (std::size_t s = 0; s <= t; ++s) dpre[s] = att[t * Tn + s] * (datt[s] - dot);
        // pre_s = scale q_t·k_s: gradients into q and k.
        for (std::size_t s = 0; s <= t; ++s)
          for (std::size_t d = 0; d < L.hs; ++d) {
            gq[L.at(L.q, b, t, h, d)] += scale * dpre[s] * double(k[L.at(L.k, b, s, g, d)]);
            gk[L.at(L.k, b, s, g, d)] += scale * dpre[s] * double(q[L.at(L.q, b, t, h, d)]);
          }
      }
    }
}

template <class T>
void round_to(std::vector<T>& dst, const std::vector<double>& src) {
  dst.assign(src.begin(), src.end());
}

}  // namespace

template <class T>
void attention_forward(std::vector<T>& out, std::vector<T>& lse, const std::vector<T>& qkv,
                       std::size_t B, std::size_t Tn, std::size_t C, std::size_t NH,
                       const std::vector<uint32_t>& positions, const Masking& m) {
  forward(out, lse, qkv.data(), qkv.data(), qkv.data(), fused(Tn, C, NH, positions, m), B);
}

template <class T>
void attention_backward(std::vector<T>& dqkv, const std::vector<T>& dout, const std::vector<T>& qkv,
                        std::size_t B, std::size_t Tn, std::size_t C, std::size_t NH,
                        const std::vector<uint32_t>& positions, const Masking& m) {
  std::vector<double> grad(B * Tn * 3 * C, 0.0);
  const T* x = qkv.data();
  backward(grad.data(), grad.data(), grad.data(), dout, x, x, x, fused(Tn, C, NH, positions, m), B);
  round_to(dqkv, grad);
}

template <class T>
void gqa_attention_forward(std::vector<T>& out, std::vector<T>& lse, const std::vector<T>& q,
                           const std::vector<T>& k, const std::vector<T>& v, const GqaDims& n,
                           const std::vector<uint32_t>& positions) {
  forward(out, lse, q.data(), k.data(), v.data(), separate(n, positions), n.B);
}

template <class T>
void gqa_attention_backward(std::vector<T>& dq, std::vector<T>& dk, std::vector<T>& dv,
                            const std::vector<T>& dout, const std::vector<T>& q,
                            const std::vector<T>& k, const std::vector<T>& v, const GqaDims& n,
                            const std::vector<uint32_t>& positions) {
  std::vector<double> gq(q.size(), 0.0), gk(k.size(), 0.0), gv(v.size(), 0.0);
  backward(gq.data(), gk.data(), gv.data(), dout, q.data(), k.data(), v.data(),
           separate(n, positions), n.B);
  round_to(dq, gq);
  round_to(dk, gk);
  round_to(dv, gv);
}

#define REMAT_REF_ATTENTION(T)                                                                    \
  template void attention_forward<T>(std::vector<T>&, std::vector<T>&, const std::vector<T>&,     \
                                     std::size_t, std::size_t, std::size_t, std::size_t,          \
                                     const std::vector<uint32_t>&, const Masking&);               \
  template void attention_backward<T>(                                                            \
      std::vector<T>&, const std::vector<T>&, const std::vector<T>&, std::size_t, std::size_t,    \
      std::size_t, std::size_t, const std::vector<uint32_t>&, const Masking&);                    \
  template void gqa_attention_forward<T>(std::vector<T>&, std::vector<T>&, const std::vector<T>&, \
                                         const std::vector<T>&, const std::vector<T>&,            \
                                         const GqaDims&, const std::vector<uint32_t>&);           \
  template void gqa_attention_backward<T>(std::vector<T>&, std::vector<T>&, std::vector<T>&,      \
                                          const std::vector<T>&, const std::vector<T>&,           \
                                          const std::vector<T>&, const std::vector<T>&,           \
                                          const GqaDims&, const std::vector<uint32_t>&);
REMAT_REF_ATTENTION(float)
REMAT_REF_ATTENTION(double)
#undef REMAT_REF_ATTENTION

}  // namespace remat::ref
