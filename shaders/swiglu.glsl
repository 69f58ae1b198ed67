// silu(x) = x sigmoid(x) = x / (1 + exp(-x)), shared by swiglu_forward.comp and
// swiglu_backward.comp so that du in the backward multiplies exactly the forward's silu(g).
// exp(80) is finite in fp32; beyond it sigmoid is below 1e-34 anyway (as gelu_forward.comp).
float exp_neg(float x) { return exp(min(-x, 80.0)); }
float silu(float x) { return x / (1.0 + exp_neg(x)); }
