#include "graph/rope_scaling.h"

#include <numbers>

namespace remat {

RopeScaleTerms rope_scale_terms(const Llama3Scaling& s) {
  if (s.factor == 0.0f) return {};
  if (is_linear_scaling(s)) return {0.0f, 0.0f, static_cast<float>(1.0 / double(s.factor))};
  const double span = double(s.high_freq_factor) - double(s.low_freq_factor);
  return {static_cast<float>(double(s.original_ctx) / (2.0 * std::numbers::pi * span)),
          static_cast<float>(double(s.low_freq_factor) / span),
          static_cast<float>(1.0 / double(s.factor))};
}

double llama3_scaled_inv_freq(double inv_freq, const Llama3Scaling& s) {
  if (s.factor == 0.0f) return inv_freq;
  if (is_linear_scaling(s)) return inv_freq / s.factor;
  const double low_wavelen = s.original_ctx / double(s.low_freq_factor);
  const double high_wavelen = s.original_ctx / double(s.high_freq_factor);
  const double wavelen = 2.0 * std::numbers::pi / inv_freq;
  if (wavelen > low_wavelen) return inv_freq / s.factor;
  if (wavelen < high_wavelen) return inv_freq;
  const double smooth = (s.original_ctx / wavelen - s.low_freq_factor) /
                        (double(s.high_freq_factor) - s.low_freq_factor);
  return (1 - smooth) * inv_freq / s.factor + smooth * inv_freq;
}

}  // namespace remat
