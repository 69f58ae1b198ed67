// silu(x) = x sigmoid(x) = x / (1 + exp(-x)), shared by swiglu_forward.comp and
// swiglu_backward.comp so that du in the backward multiplies exactly the forward's silu(g).
// exp(80) is finite in fp32; beyond it sigmoid is below 1e-34 anyway (as gelu_forward.comp).
float exp_neg(float x) { return exp(min(-x, 80.0)); }
float silu(float x) { return x / (1.0 + exp_neg(x)); }
// silu'(x) = s (1 + x (1 - s)), s = sigmoid(x), with 1 - s formed as exp(-x) s: accurate where s
// is close to 1 (the same arithmetic as swiglu_backward_body.glsl's).
float silu_grad(float x) {
  float e = exp_neg(x);
  float s = 1.0 / (1.0 + e);
  return s * (1.0 + x * e * s);
}
