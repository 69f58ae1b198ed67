#version 450
#extension GL_GOOGLE_include_directive : require
#include "gdn_gates_params.h"
#include "softplus.glsl"
#include "swiglu.glsl"

// Backward of g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b):
//   da = dg * (-exp(A_log)) * softplus'(a + dt_bias),   ddt_bias[h] = sum over tokens of da,
//   dA_log[h] = sum over tokens of dg * g,               db = dbeta * beta * (1 - beta),
// 1 - beta formed as exp(-b) beta (accurate where beta nears 1). One workgroup per head (a grid
// stride over heads past 65535): invocation lid takes tokens lid, lid + GROUP, ... in order,
// writes their da and db and keeps running sums; a shared-memory tree in a fixed pairing adds
// the sums. GROUP is a constant, so the order, and the bits, are the same on every device and
// run; no atomics.
#define GROUP GDN_GATES_GROUP
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DG { float dg[]; };
layout(std430, binding = 1) readonly buffer DBeta { float dbeta[]; };
layout(std430, binding = 2) readonly buffer A { float a[]; };
layout(std430, binding = 3) readonly buffer B { float b[]; };
layout(std430, binding = 4) readonly buffer ALog { float a_log[]; };
layout(std430, binding = 5) readonly buffer DtBias { float dt_bias[]; };
layout(std430, binding = 6) buffer DA { float da[]; };
layout(std430, binding = 7) buffer DB { float db[]; };
layout(std430, binding = 8) buffer DALog { float da_log[]; };
layout(std430, binding = 9) buffer DDtBias { float ddt_bias[]; };
layout(push_constant) uniform Push { GdnGatesParams p; };

shared float partial_a_log[GROUP];
shared float partial_dt[GROUP];

void main() {
  uint lid = gl_LocalInvocationID.x;
  for (uint h = gl_WorkGroupID.x; h < p.heads; h += gl_NumWorkGroups.x) {
    float neg_a = -exp(a_log[h]);
    float sum_a_log = 0.0, sum_dt = 0.0;
    for (uint t = lid; t < p.tokens; t += GROUP) {
      uint i = t * p.heads + h;
      float pre = a[i] + dt_bias[h];
      float g = neg_a * softplus(pre);
      float vda = dg[i] * neg_a * softplus_grad(pre);
      float e = exp_neg(b[i]);
      float s = 1.0 / (1.0 + e);
      float vdb = dbeta[i] * s * (e * s);
      da[i] = p.accumulate_da != 0 ? da[i] + vda : vda;
      db[i] = p.accumulate_db != 0 ? db[i] + vdb : vdb;
      sum_a_log = fma(dg[i], g, sum_a_log);
      sum_dt += vda;
    }
    partial_a_log[lid] = sum_a_log;
    partial_dt[lid] = sum_dt;
    barrier();
    for (uint half_ = GROUP / 2; half_ > 0; half_ /= 2) {
      if (lid < half_) {
        partial_a_log[lid] += partial_a_log[lid + half_];
        partial_dt[lid] += partial_dt[lid + half_];
      }
      barrier();
    }
    // accumulate_dparams 2: A_log and dt_bias are frozen (LoRA), their gradients not written.
    if (lid == 0 && p.accumulate_dparams != 2u) {
      bool acc = p.accumulate_dparams != 0;
      da_log[h] = acc ? da_log[h] + partial_a_log[0] : partial_a_log[0];
      ddt_bias[h] = acc ? ddt_bias[h] + partial_dt[0] : partial_dt[0];
    }
    barrier();  // the partial sums are rewritten for the next head
  }
}
