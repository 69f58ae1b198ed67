// Shared by causal_conv1d_forward.comp and both backward kernels, so that every one of them sums
// the same taps in the same order. Includers bind X (x[]), W (w[]) and Positions (positions[])
// and push CausalConv1dParams p.
//
// Tap order and weight layout as PyTorch's nn.Conv1d(groups=C, padding=K-1) truncated to the
// first T outputs (transformers' causal_conv1d_fn) and llama.cpp's ssm_conv: w[c, K-1]
// multiplies the current token, w[c, K-1-j] the token j steps back.
//
// TAPS is K as a specialization constant (the dispatch builders set it), so the loops over taps
// have a constant trip count: the compiler unrolls them and keeps the windows in registers.
layout(constant_id = 3) const uint TAPS = 4;

// How many steps back the window of token (row, t) reaches before leaving its example: its
// position in the example (never past the row's start).
uint conv_reach(uint row, uint t) {
  return p.has_positions != 0 ? min(positions[row * p.T + t], t) : t;
}

// A window of one channel: win[k] holds x at t - (TAPS-1) + k once conv_push(t) ran.
// conv_window_start fills it for a walk that begins at token t0 (the taps before t0).
void conv_window_start(inout float win[CAUSAL_CONV1D_MAX_TAPS], uint row, uint t0, uint c) {
  win[0] = 0.0;  // shifted out by the first push
  for (uint k = 1; k < TAPS; ++k) {
    uint back = TAPS - k;  // win[k] before the first push: x at t0 - back
    win[k] = back <= t0 ? x[(row * p.T + t0 - back) * p.C + c] : 0.0;
  }
}

void conv_push(inout float win[CAUSAL_CONV1D_MAX_TAPS], uint row, uint t, uint c) {
  for (uint k = 0; k + 1 < TAPS; ++k) win[k] = win[k + 1];
  win[TAPS - 1] = x[(row * p.T + t) * p.C + c];
}

// sum_k w[c,k] x[t-(K-1)+k] over k = 0, 1, ..., K-1, skipping taps before the example's start:
// they read zero, and skipping them keeps a packed row's bits equal to its examples' run alone.
float conv_pre(float win[CAUSAL_CONV1D_MAX_TAPS], float wc[CAUSAL_CONV1D_MAX_TAPS], uint reach) {
  float acc = 0.0;
  for (uint k = 0; k < TAPS; ++k)
    if (TAPS - 1 - k <= reach) acc = fma(wc[k], win[k], acc);
  return acc;
}

void conv_weights(out float wc[CAUSAL_CONV1D_MAX_TAPS], uint c) {
  for (uint k = 0; k < TAPS; ++k) wc[k] = w[c * TAPS + k];
}
