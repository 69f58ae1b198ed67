// Included by rope_forward.comp (ROPE_SIGN 1.0) and rope_backward.comp (ROPE_SIGN -1.0).
//
// Rotary position embedding in Hugging Face's convention (rotate_half): the head's element i is
// paired with element i + D/2 and the pair is rotated by angle t * inv_freq_i, with
// inv_freq_i = theta^(-2i/D). One invocation per pair, with a grid stride.
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

// theta^(-2i/D) times Llama 3's frequency scale, see rope_params.h. `precise`: no fused
// multiply-adds, which would change the roundings the reference reproduces.
float inv_freq(uint i) {
  precise float x = -(float(2 * i) * p.inv_D) * p.log2_theta;
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

void main() {
  const uint half_d = p.D / 2;
  const uint pairs = p.B * p.T * p.H * half_d;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint k = gl_GlobalInvocationID.x; k < pairs; k += stride) {
    const uint i = k % half_d;
    const uint h = (k / half_d) % p.H;
    const uint bt = k / half_d / p.H;  // b * T + t
    const uint t = p.packed != 0 ? positions[bt] : bt % p.T;

    precise float angle = float(t) * inv_freq(i);
    const float r = reduce_angle(angle);
    const float c = cos(r);
    const float s = ROPE_SIGN * sin(r);

    const uint a = bt * p.in_stride + p.in_offset + h * p.D + i;
    const float x1 = LOAD_ACT(src[a]), x2 = LOAD_ACT(src[a + half_d]);
    const float y1 = x1 * c - x2 * s;
    const float y2 = x2 * c + x1 * s;
    const uint o = bt * p.out_stride + p.out_offset + h * p.D + i;
    dst[o] = STORE_ACT(p.accumulate != 0 ? LOAD_ACT(dst[o]) + y1 : y1);
    dst[o + half_d] = STORE_ACT(p.accumulate != 0 ? LOAD_ACT(dst[o + half_d]) + y2 : y2);
  }
}
