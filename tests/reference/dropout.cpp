#include "tests/reference/dropout.h"

#include "shaders/dropout_params.h"

namespace remat::ref {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * ctr[0];
    const uint64_t p1 = uint64_t(0xCD9E8D57u) * ctr[2];
    ctr = {uint32_t(p1 >> 32) ^ ctr[1] ^ key[0], uint32_t(p1), uint32_t(p0 >> 32) ^ ctr[3] ^ key[1],
           uint32_t(p0)};
    key[0] += 0x9E3779B9u;
    key[1] += 0xBB67AE85u;
  }
  return ctr;
}

bool dropout_keep(const DropoutConfig& cfg, uint32_t i) {
  const auto words = philox4x32_10({i / 4, cfg.step, cfg.op_id, 0},
                                   {uint32_t(cfg.seed), uint32_t(cfg.seed >> 32)});
  return words[i % 4] >= push::dropout_threshold(cfg.p);
}

template <class T>
void dropout_forward(std::vector<T>& y, const std::vector<T>& x, const DropoutConfig& cfg) {
  const T scale = T(push::dropout_scale(cfg.p));
  y.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    y[i] = dropout_keep(cfg, uint32_t(i)) ? x[i] * scale : T(0);
}

template <class T>
void dropout_backward(std::vector<T>& dx, const std::vector<T>& dy, const DropoutConfig& cfg,
                      bool accumulate) {
  const T scale = T(push::dropout_scale(cfg.p));
  for (std::size_t i = 0; i < dy.size(); ++i) {
    const T g = dropout_keep(cfg, uint32_t(i)) ? dy[i] * scale : T(0);
    dx[i] = accumulate ? dx[i] + g : g;
  }
}

template void dropout_forward<float>(std::vector<float>&, const std::vector<float>&,
                                     const DropoutConfig&);
template void dropout_forward<double>(std::vector<double>&, const std::vector<double>&,
                                      const DropoutConfig&);
template void dropout_backward<float>(std::vector<float>&, const std::vector<float>&,
                                      const DropoutConfig&, bool);
template void dropout_backward<double>(std::vector<double>&, const std::vector<double>&,
                                       const DropoutConfig&, bool);

}  // namespace remat::ref
