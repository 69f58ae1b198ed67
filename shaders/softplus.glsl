// softplus and its derivative as PyTorch's F.softplus (beta 1, threshold 20): x itself above
// the threshold, log1p(exp(x)) below it; the derivative 1 above, sigmoid(x) below
// (torch softplus_backward: z / (z + 1), z = exp(x)). transformers' Gated DeltaNet calls
// F.softplus with its defaults.
// GLSL has no log1p, and log itself may be off by 2^-21 absolute near 1 (the Vulkan spec's
// bound in [0.5, 2]), a large relative error for softplus's small values. So
// log1p(exp(x)) = max(x, 0) + log1p(e), e = exp(-|x|) in (0, 1], and log1p(e) = 2 atanh(s)
// = 2 (s + s^3/3 + s^5/5 + ...) with s = e / (2 + e) <= 1/3: ten terms leave a relative error
// under (1/9)^10 / 21 < 2e-11, so only fp32 rounding remains, on every device.
#ifndef REMAT_SOFTPLUS_GLSL
#define REMAT_SOFTPLUS_GLSL

float log1p_unit(float e) {
  float s = e / (2.0 + e);
  float s2 = s * s;
  float sum = 1.0 / 19.0;
  for (int k = 8; k >= 0; --k) sum = fma(sum, s2, 1.0 / float(2 * k + 1));
  return 2.0 * s * sum;
}

float softplus(float x) {
  if (x > 20.0) return x;
  return max(x, 0.0) + log1p_unit(exp(-abs(x)));
}

float softplus_grad(float x) {
  if (x > 20.0) return 1.0;
  return 1.0 / (1.0 + exp(min(-x, 80.0)));
}

#endif  // REMAT_SOFTPLUS_GLSL
