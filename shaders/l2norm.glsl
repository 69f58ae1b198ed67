// Shared by l2norm_forward.comp and l2norm_backward.comp, so the backward recomputes the
// forward's inverse norm bit for bit. Includers bind X (x[]) and push L2normParams p.
//
// transformers' l2norm (qwen3_next, qwen3_5), as flash-linear-attention's:
// x * rsqrt(sum(x^2) + eps), eps inside the square root and not scaled by D.

// First float of row (token, head) in x and dx.
uint l2_base(uint row) { return (row / p.heads) * p.stride + p.offset + (row % p.heads) * p.D; }

// 1/sqrt(sum x^2 + eps), the squares summed d = 0, 1, ... (fma).
float l2_inverse_norm(uint base) {
  float sq = 0.0;
  for (uint d = 0; d < p.D; ++d) sq = fma(x[base + d], x[base + d], sq);
  return inversesqrt(sq + p.eps);
}
