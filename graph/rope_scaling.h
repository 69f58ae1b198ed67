// Llama 3.1+'s RoPE frequency scaling (config.json rope_scaling, rope_type "llama3"), and the
// form the kernels compute it in.
//
// transformers' _compute_llama3_parameters scales each inverse frequency by its wavelength
// w = 2π / inv_freq: w > original_ctx / low_freq_factor → inv_freq / factor; w < original_ctx /
// high_freq_factor → inv_freq; between, with smooth = (original_ctx / w − low) / (high − low),
// (1 − smooth) · inv_freq / factor + smooth · inv_freq. The two bounds are exactly smooth < 0 and
// smooth > 1, and the blend equals both outer branches at smooth = 0 and 1, so the whole rule is
//   inv_freq · (1/factor + s · (1 − 1/factor)),  s = clamp(inv_freq · slope − offset, 0, 1),
//   slope = original_ctx / (2π (high − low)),    offset = low / (high − low).
// That form needs no division on the device: the RoPE kernels (shaders/rope_body.glsl) and the
// reference (tests/reference/rope.cpp) evaluate it with the same correctly rounded float
// operations from the same three floats (RopeScaleTerms), so their angles stay bit-identical.
#pragma once

namespace remat {

// transformers' `linear` scaling (Gemma 3's global layers) is the same form without a band:
// factor f with low_freq_factor = high_freq_factor = original_ctx = 0 divides every frequency by
// f (slope 0, offset 0, scale 1/f), as linear_scaling() builds it.
//
// The rope_scaling factors; all zero means no scaling.
struct Llama3Scaling {
  float factor = 0.0f;            // factor (32 for Llama 3.2)
  float low_freq_factor = 0.0f;   // low_freq_factor (1)
  float high_freq_factor = 0.0f;  // high_freq_factor (4)
  int original_ctx = 0;           // original_max_position_embeddings (8192)
  bool operator==(const Llama3Scaling&) const = default;
};

// The kernels' constants, each computed in double and rounded to float once. For no scaling
// (factor 0): slope 0, offset 0, inv_factor 1, which leaves every frequency's bits unchanged
// (s = 0, scale = 1 + 0 · 0 = 1 exactly).
struct RopeScaleTerms {
  float slope = 0.0f;
  float offset = 0.0f;
  float inv_factor = 1.0f;
};
RopeScaleTerms rope_scale_terms(const Llama3Scaling& s);

// transformers' rope_type `linear` with `factor`: every frequency divided by it.
inline Llama3Scaling linear_scaling(float factor) {
  return {factor, 0.0f, 0.0f, 0};
}
inline bool is_linear_scaling(const Llama3Scaling& s) {
  return s.factor != 0.0f && s.low_freq_factor == 0.0f && s.high_freq_factor == 0.0f &&
         s.original_ctx == 0;
}

// transformers' rule as written there (the three branches; linear: inv_freq / factor), in double:
// for tests and references.
double llama3_scaled_inv_freq(double inv_freq, const Llama3Scaling& s);

}  // namespace remat
