// The AdamW update of one element, shared by adamw.comp (storage buffers, one float per
// iteration) and adamw_texels.comp (the gradient read through a texel view, four floats per
// iteration), so both compute the same expressions in the same order and give the same bits.
// Declares the hyperparameter and clip bindings (4 and 5); adamw_table*.comp include it too, so
// a parameter updated by the one dispatch over all parameters gets the same bits.
//
// AdamW with PyTorch's semantics (torch.optim.AdamW, Loshchilov & Hutter, "Decoupled Weight
// Decay Regularization", ICLR 2019), elementwise and in place:
//   g  = grad * clip_scale
//   p *= 1 - lr * wd                                    (decoupled decay, applied first)
//   m  = beta1 m + (1 - beta1) g
//   v  = beta2 v + (1 - beta2) g^2
//   p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)     (bc = bias corrections, PyTorch's form)
// Hyperparameters come from a storage buffer so a recorded command buffer can be replayed with a
// new learning rate and step. The gradient buffer itself is left unclipped.

layout(std430, binding = 4) readonly buffer Hyper { AdamWHyper h; };
layout(std430, binding = 5) readonly buffer Clip { GradNormResult clip; };

// The per-dispatch factors, formed once per invocation, and the hyperparameters the element
// update reads, loaded once too: on llvmpipe a storage-buffer load inside a loop is a loop over
// the SIMD lanes, and the compiler cannot hoist it past the loop's stores to param, m and v.
struct AdamWFactors {
  float scale;      // clip scale, or 1
  float decay;      // 1 - lr * wd, or 1
  float step_size;  // lr / bc1
  float bc2_sqrt;   // sqrt(bc2)
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;  // h's, as stored
};

// decay, clipped: AdamWParams.decay and .clip.
AdamWFactors adamw_factors_for(uint decay, uint clipped) {
  AdamWFactors f;
  f.scale = clipped != 0 ? clip.clip_scale : 1.0;
  f.decay = decay != 0 ? 1.0 - h.lr * h.weight_decay : 1.0;
  f.step_size = h.lr / h.bias_correction1;
  f.bc2_sqrt = sqrt(h.bias_correction2);
  f.beta1 = h.beta1;
  f.one_minus_beta1 = h.one_minus_beta1;
  f.beta2 = h.beta2;
  f.one_minus_beta2 = h.one_minus_beta2;
  f.eps = h.eps;
  return f;
}

// One element: `param`, `m` and `v` hold the old values on entry and the new ones on return.
void adamw_element(AdamWFactors f, float grad, inout float param, inout float m, inout float v) {
  const float g = grad * f.scale;
  m = f.beta1 * m + f.one_minus_beta1 * g;
  v = f.beta2 * v + f.one_minus_beta2 * g * g;
  const float denom = sqrt(v) / f.bc2_sqrt + f.eps;
  param = param * f.decay - f.step_size * m / denom;
}
