// The pre-activation of the causal depthwise conv1d, shared by causal_conv1d_forward.comp and
// both backward kernels, so that every one of them sums the same taps in the same order.
// Includers bind X (x[]), W (w[]) and Positions (positions[]) and push CausalConv1dParams p.
//
// Tap order and weight layout as PyTorch's nn.Conv1d(groups=C, padding=K-1) truncated to the
// first T outputs (transformers' causal_conv1d_fn) and llama.cpp's ssm_conv: w[c, K-1]
// multiplies the current token, w[c, K-1-j] the token j steps back.

// How many steps back the window of token (row, t) reaches before leaving its example.
uint conv_reach(uint row, uint t) {
  return p.has_positions != 0 ? positions[row * p.T + t] : t;
}

// sum_k w[c,k] x[row, t-(K-1)+k, c] over k = 0, 1, ..., K-1, skipping taps before the
// example's start: they read zero, and skipping them keeps a packed row's bits equal to its
// examples' run alone.
float conv_pre(uint row, uint t, uint c) {
  uint reach = conv_reach(row, t);
  float acc = 0.0;
  for (uint k = 0; k < p.K; ++k) {
    uint back = p.K - 1 - k;
    if (back <= reach) acc = fma(w[c * p.K + k], x[(row * p.T + t - back) * p.C + c], acc);
  }
  return acc;
}
