// First stage of the global gradient norm, shared by grad_norm_partial.comp (storage buffer) and
// grad_norm_partial_texels.comp (texel view), which differ only in how they load and store:
// each defines GN_WIDTH (floats per load, 1 or 4), GN_T (float or vec4), `GN_T grad_at(uint j)`
// (floats j * GN_WIDTH onwards) and `void store_partials(uint i, GN_T sum)` (partials
// i * GN_WIDTH onwards) before including this file. A vec4 load carries one float of each of
// four consecutive slots; the compensated sum is componentwise, so each slot's float operations
// are the same in both widths.
//
// Invocation i sums grad[i + j * slots]^2 over j in increasing order into partials[i]. Each
// parameter tensor gets its own dispatch, bound to its own range of the partials buffer;
// grad_norm_finalize.comp then sums all slots in order. Everything is in a fixed order with no
// atomics, so the norm is bit-identical across runs and across the two loads.
//
// The sum is compensated (Kahan): a slot of the 38M-element token embedding sums ~10^5 squares,
// where a plain float sum would lose several digits. `precise` stops the compiler from
// reassociating the compensation away.
layout(local_size_x_id = 0) in;

layout(std430, binding = 1) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push { GradNormPartialParams p; };

void main() {
  // Invocation i owns slots i * GN_WIDTH onwards; p.count and p.slots are multiples of GN_WIDTH.
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.slots / GN_WIDTH) return;
  precise GN_T sum = GN_T(0.0);
  precise GN_T lost = GN_T(0.0);  // low-order bits lost from `sum` so far
  for (uint j = i; j < p.count / GN_WIDTH; j += p.slots / GN_WIDTH) {
    const GN_T g = grad_at(j);
    precise GN_T y = g * g - lost;
    precise GN_T t = sum + y;
    lost = (t - sum) - y;
    sum = t;
  }
  store_partials(i, sum);
}
