// GPT-2's GELU and its derivative for one element, shared by gelu_*.comp and gelu_*_texels.comp
// so every variant computes the same float operations in the same order (the same bits).
// The tanh approximation (Hendrycks & Gimpel 2016):
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3),
// evaluated through the identity 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)): the same function,
// but without the cancellation of 1 + tanh(u) for negative x, where tanh(u) is close to -1 and
// fp32 would keep only a few correct digits of the result.

const float SQRT_2_OVER_PI = 0.7978845608028654;  // sqrt(2 / pi)

float gelu(float v) {
  float u = SQRT_2_OVER_PI * (v + 0.044715 * v * v * v);
  // exp(80) is finite in fp32; beyond it the result is below 1e-34 anyway.
  return v / (1.0 + exp(min(-2.0 * u, 80.0)));
}

// gelu'(x). With s = 1 / (1 + exp(-2u)) = 0.5 (1 + tanh(u)), gelu(x) = x s and
//   gelu'(x) = s + x * 2 s (1 - s) * du/dx,  du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2),
// where 1 - s = e s with e = exp(-2u), which stays accurate when s is close to 1.
float gelu_grad(float v) {
  float u = SQRT_2_OVER_PI * (v + 0.044715 * v * v * v);
  float e = exp(min(-2.0 * u, 80.0));
  float s = 1.0 / (1.0 + e);
  float du = SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * v * v);
  return s + v * 2.0 * s * (e * s) * du;
}
