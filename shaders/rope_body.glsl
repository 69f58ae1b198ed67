// Included by rope_forward.comp (ROPE_SIGN 1.0) and rope_backward.comp (ROPE_SIGN -1.0).
//
// Rotary position embedding in Hugging Face's convention (rotate_half): of the head's first R
// elements (R = D unless partial), element i is paired with element i + R/2 and the pair is
// rotated by angle t * inv_freq_i, with inv_freq_i = theta^(-2i/R). One invocation per pair, with
// a grid stride; with copy_rest, (D - R)/2 more per head each carry two pass-through elements.
//
// The backward is the same rotation by -angle (a rotation's transpose is its inverse): the two
// kernels share every instruction that computes cos and sin, and ROPE_SIGN only negates sin,
// which is exact, so the forward and the backward rotate by exactly opposite float angles.
// The angle float(t) * inv_freq_i is formed with correctly rounded operations only (see
// rope_params.h), bit-identical to tests/reference/rope.cpp: with the device's exp2 instead,
// rotations at t = 4095 were measured up to 6.6e-4 off the reference on llvmpipe, an ulp of
// inv_freq times t. cos and sin are taken after a Cody-Waite reduction of the angle to
// [-pi, pi], the only range where Vulkan bounds their error (llvmpipe reduces well by itself).
#include "act16.glsl"  // src and dst: ACT_T, fp32 unless the wrapper says otherwise
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer In { ACT_T src[]; };
layout(std430, binding = 1) buffer Out { ACT_T dst[]; };
layout(std430, binding = 2) readonly buffer Positions { uint positions[]; };  // packed rows
layout(push_constant) uniform Push { RopeParams p; };

// theta^(-2i/R) times Llama 3's frequency scale, see rope_params.h. `precise`: no fused
// multiply-adds, which would change the roundings the reference reproduces.
float inv_freq(uint i) {
  precise float x = -(float(2 * i) * p.inv_R) * p.log2_theta;
  precise float n = floor(x + 0.5);
  precise float f = x - n;
  precise float q;
  REMAT_ROPE_EXP2_POLYNOMIAL(q, f);
  precise float base = ldexp(q, int(n));
  precise float s = clamp(base * p.scale_slope - p.scale_offset, 0.0, 1.0);
  precise float scale = p.inv_factor + s * (1.0 - p.inv_factor);
  return base * scale;
}

// angle - k 2pi for the nearest k, with 2pi = P1 + P2 + P3: P1 (8 bits) and P2 (7 bits) are short
// enough that k P1 and k P2 are exact for k < 2^16 (positions below 411,000), and angle - k P1
// is exact because the two are within a factor of 2.
float reduce_angle(float angle) {
  const float P1 = 6.28125, P2 = 0.0019378662109375, P3 = -2.559031372584286e-06;
  precise float k = floor(angle * 0.15915494309189535 + 0.5);
  precise float r = angle - k * P1;
  r = r - k * P2;
  r = r - k * P3;
  return r;
}

// Pass-through elements e and e + 1 of a head (R <= e < D): copied as stored, so bit for bit
// whatever the storage type; the backward accumulating adds them (the rotation's identity part).
void pass_through(uint a, uint o) {
  for (uint e = 0; e < 2; ++e) {
    if (p.accumulate != 0)
      dst[o + e] = STORE_ACT(LOAD_ACT(dst[o + e]) + LOAD_ACT(src[a + e]));
    else
      dst[o + e] = src[a + e];
  }
}

void main() {
  const uint half_r = p.R / 2;
  const uint items = half_r + (p.copy_rest != 0 ? (p.D - p.R) / 2 : 0);  // per head
  const uint count = p.B * p.T * p.H * items;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint k = gl_GlobalInvocationID.x; k < count; k += stride) {
    const uint i = k % items;
    const uint h = (k / items) % p.H;
    const uint bt = k / items / p.H;  // b * T + t
    const uint head_in = bt * p.in_stride + p.in_offset + h * p.D;
    const uint head_out = bt * p.out_stride + p.out_offset + h * p.D;
    if (i >= half_r) {
      const uint e = p.R + 2 * (i - half_r);
      pass_through(head_in + e, head_out + e);
      continue;
    }
    const uint t = p.packed != 0 ? positions[bt] : bt % p.T;

    precise float angle = float(t) * inv_freq(i);
    const float r = reduce_angle(angle);
    const float c = cos(r);
    const float s = ROPE_SIGN * sin(r);

    const uint a = head_in + i;
    const float x1 = LOAD_ACT(src[a]), x2 = LOAD_ACT(src[a + half_r]);
    const float y1 = x1 * c - x2 * s;
    const float y2 = x2 * c + x1 * s;
    const uint o = head_out + i;
    dst[o] = STORE_ACT(p.accumulate != 0 ? LOAD_ACT(dst[o]) + y1 : y1);
    dst[o + half_r] = STORE_ACT(p.accumulate != 0 ? LOAD_ACT(dst[o + half_r]) + y2 : y2);
  }
}
