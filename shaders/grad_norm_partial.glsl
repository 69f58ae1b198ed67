// First stage of the global gradient norm, shared by grad_norm_partial*.comp (one dispatch per
// tensor) and grad_norm_table*.comp (one dispatch over every tensor of a binding window), which
// differ only in how they load and what they bind: each defines GN_WIDTH (floats per load, 1 or
// 4), GN_T (float or vec4) and `GN_T grad_at(uint j)` (floats j * GN_WIDTH onwards of the
// tensor) before including this file. A vec4 load carries one float of each of four consecutive
// slots; the compensated sum is componentwise, so each slot's float operations are the same in
// both widths.
//
// Slot i of a tensor sums grad[i + j * slots]^2 over j in increasing order; each tensor (or
// piece of one) has its own range of the partials buffer, and grad_norm_finalize.comp then sums
// all slots in order. Everything is in a fixed order with no atomics, so the norm is
// bit-identical across runs, across the two loads and across the two dispatch layouts.
//
// The sum is compensated (Kahan): a slot of the 38M-element token embedding sums ~10^5 squares,
// where a plain float sum would lose several digits. `precise` stops the compiler from
// reassociating the compensation away.

// The sum of slot(s) i * GN_WIDTH onwards of a tensor of count floats in `slots` slots
// (count and slots given divided by GN_WIDTH; both are multiples of it).
GN_T gn_slot_sum(uint i, uint count, uint slots) {
  precise GN_T sum = GN_T(0.0);
  precise GN_T lost = GN_T(0.0);  // low-order bits lost from `sum` so far
  for (uint j = i; j < count; j += slots) {
    const GN_T g = grad_at(j);
    precise GN_T y = g * g - lost;
    precise GN_T t = sum + y;
    lost = (t - sum) - y;
    sum = t;
  }
  return sum;
}
