#include "formats/gguf_rope_freqs.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <string>

namespace remat {
namespace {

// The converter's frequency i: torch's arange(0, dim, 2) / dim in float32, theta (float32) to
// that power, then 1.0 / p, which torch computes as reciprocal(p) * 1.0.
float converter_freq(float theta, int head_dim, int i) {
  const float exponent = float(2 * i) / float(head_dim);
  const float p = static_cast<float>(std::pow(double(theta), double(exponent)));
  return 1.0f / p;
}

// The band's line and its high/low ratio: smooth = inv_freq · slope - offset, and with low 1,
// original_ctx = 2π · slope / offset and high = 1 + 1 / offset (graph/rope_scaling.h).
struct Band {
  double ratio;        // high_freq_factor / low_freq_factor
  double ctx_per_low;  // original_ctx / low_freq_factor
};

// Least squares over the band's values, in double.
std::optional<Band> fit_band(const std::vector<double>& inv, const std::vector<double>& smooth) {
  const double n = double(inv.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < inv.size(); ++i) {
    sx += inv[i];
    sy += smooth[i];
    sxx += inv[i] * inv[i];
    sxy += inv[i] * smooth[i];
  }
  const double det = n * sxx - sx * sx;
  if (det <= 0) return std::nullopt;
  const double slope = (n * sxy - sx * sy) / det;
  const double offset = (slope * sx - sy) / n;
  if (!(slope > 0) || !(offset > 0)) return std::nullopt;
  return Band{1 + 1 / offset, 2 * std::numbers::pi * slope / offset};
}

// A band that holds no frequency lies between the longest wavelength with factor 1 (`shorter`, 0
// when none) and the shortest with `factor` (`longer`): high / low at most 4 (Llama 3's), and
// original_ctx / low at the geometric middle of the room left.
Band empty_band(double shorter, double longer) {
  const double ratio = shorter > 0 ? std::min(4.0, std::sqrt(longer / shorter)) : 4.0;
  const double lowest = shorter > 0 ? shorter * ratio : longer / 4;
  return {ratio, std::sqrt(lowest * longer)};
}

bool reproduces(const Llama3Scaling& s, std::span<const float> v, float theta, int head_dim) {
  const std::vector<float> r = gguf_rope_freqs(s, theta, head_dim);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!(std::abs(double(r[i]) - double(v[i])) <= kRopeFreqsTolerance * double(v[i])))
      return false;
  return true;
}

// The simplest parameters on the band's line that reproduce `v` (gguf_rope_freqs.h says which):
// original_ctx must be an integer, so each low_freq_factor tried fixes it, and high follows.
std::optional<Llama3Scaling> simplest(const Band& b, float factor, std::span<const float> v,
                                      float theta, int head_dim) {
  std::vector<double> lows = {1.0};
  for (int q = 1; q <= 32; ++q)
    if (q != 4) lows.push_back(q / 4.0);
  for (double low : lows) {
    const double ctx = std::round(b.ctx_per_low * low);
    if (ctx < 1 || ctx > double(1 << 30)) continue;
    for (int digits = 0; digits <= 24; ++digits) {
      const double scale = std::ldexp(1.0, digits);
      const float high = static_cast<float>(std::round(low * b.ratio * scale) / scale);
      const Llama3Scaling s{factor, float(low), high, int(ctx)};
      if (high > float(low) && reproduces(s, v, theta, head_dim)) return s;
    }
  }
  // Parameters without round values: original_ctx rounded, low_freq_factor moved to keep the line.
  const double ctx = std::max(1.0, std::round(b.ctx_per_low));
  const float low = static_cast<float>(ctx / b.ctx_per_low);
  const Llama3Scaling s{factor, low, static_cast<float>(double(low) * b.ratio), int(ctx)};
  if (s.high_freq_factor > s.low_freq_factor && reproduces(s, v, theta, head_dim)) return s;
  return std::nullopt;
}

// The band's line from the values strictly between 1 and factor, as (inv_freq, smooth) points;
// nullopt where no line fits them.
std::optional<Band> band_of(std::span<const float> v, float factor, float theta, int head_dim) {
  std::vector<double> inv, smooth;
  double shorter = 0, longer = 0;  // wavelengths around an empty band
  for (int i = 0; i < head_dim / 2; ++i) {
    const double f = converter_freq(theta, head_dim, i), x = v[std::size_t(i)];
    const double wavelen = 2 * std::numbers::pi / f;
    if (x == 1.0) {
      shorter = std::max(shorter, wavelen);
    } else if (x == double(factor)) {
      if (longer == 0) longer = wavelen;
    } else {
      inv.push_back(f);
      smooth.push_back((1 / x - 1 / double(factor)) / (1 - 1 / double(factor)));
    }
  }
  std::optional<Band> band;
  if (inv.size() >= 2) {
    band = fit_band(inv, smooth);
  } else if (inv.size() == 1) {
    // One value fixes one point of the line: Llama 3's high / low = 4 gives it its slope.
    const double offset = 1.0 / 3;
    band = Band{4.0, 2 * std::numbers::pi * (smooth[0] + offset) / inv[0] / offset};
  } else if (longer > shorter) {
    band = empty_band(shorter, longer);
  }
  return band;
}

[[noreturn]] void refuse(const std::string& why) {
  throw std::invalid_argument(std::string(kGgufRopeFreqs) +
                              " is not Llama 3's rope_scaling: " + why);
}

}  // namespace

std::vector<float> gguf_rope_freqs(const Llama3Scaling& s, float theta, int head_dim) {
  // Python's scalars (the bounds, the span) are doubles the comparison or operation rounds to
  // float32; the loop's values are float32 tensors.
  const float two_pi = static_cast<float>(2 * std::numbers::pi);
  const float high_wavelen = static_cast<float>(double(s.original_ctx) / s.high_freq_factor);
  const float low_wavelen = static_cast<float>(double(s.original_ctx) / s.low_freq_factor);
  const float span = static_cast<float>(double(s.high_freq_factor) - s.low_freq_factor);
  std::vector<float> out(std::size_t(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) {
    const float wavelen = (1.0f / converter_freq(theta, head_dim, i)) * two_pi;
    float f = s.factor;
    if (wavelen < high_wavelen) {
      f = 1.0f;
    } else if (!(wavelen > low_wavelen)) {
      const float smooth = ((1.0f / wavelen) * float(s.original_ctx) - s.low_freq_factor) / span;
      f = 1.0f / ((1.0f - smooth) / s.factor + smooth);
    }
    out[std::size_t(i)] = f;
  }
  return out;
}

Llama3Scaling llama3_scaling_of_rope_freqs(std::span<const float> v, float theta, int head_dim) {
  if (head_dim < 2 || v.size() != std::size_t(head_dim / 2))
    refuse("it has " + std::to_string(v.size()) + " values for heads of " +
           std::to_string(head_dim));
  for (float x : v)
    if (!std::isfinite(x) || x < 1.0f) refuse("a factor is below 1 or not finite");
  const float factor = *std::max_element(v.begin(), v.end());
  if (factor == 1.0f) return {};  // every frequency unscaled: no scaling
  if (const std::optional<Band> band = band_of(v, factor, theta, head_dim))
    if (const std::optional<Llama3Scaling> s = simplest(*band, factor, v, theta, head_dim))
      return *s;
  refuse(
      "no factor, low_freq_factor, high_freq_factor and original_max_position_embeddings "
      "reproduce its values (within 2^-16)");
}

}  // namespace remat
