// Push constants of the causal attention kernels (shared by GLSL and C++, see push_constants.h
// for why every member is a 32-bit scalar).
#ifndef REMAT_ATTENTION_PARAMS_H
#define REMAT_ATTENTION_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// attention_forward.comp:  q, k, v -> out[B,T,NH*D], lse[B,NH,T]
// attention_backward.comp: dout[B,T,NH*D], q, k, v, out, lse -> dq, dk, dv
// Grouped-query attention: NH query heads share KV key/value heads (KV divides NH), query head h
// reading key/value head h / (NH / KV); KV == NH is multi-head attention.
// q holds NH heads of D floats per position, k and v KV heads each: row (b, t) of q starts at
// vec4 (b T + t) q_stride, head 0 at vec4 q_offset, head h at q_offset + h D/4; likewise k and v.
// GPT-2's fused qkv[B,T,3C] is one buffer bound three times with stride 3C/4 and offsets 0, C/4,
// 2C/4; separate compact tensors have stride NH D/4 (q) or KV D/4 (k, v) and offset 0. dq, dk and
// dv lie exactly like q, k and v; out, dout and lse are compact. scale multiplies the scores:
// 1/sqrt(D), or the model's own (Gemma 3: query_pre_attn_scalar^-0.5).
// D4 = D/4 equals the kernels' HS/4 specialization constant; the head loops run to it (see
// attention_forward_body.glsl). accumulate (backward only) 0: overwrite dq, dk, dv; 1: add.
// segments 1: packed rows, block-diagonal attention. positions[b T + t] (a u32 binding, 5 in the
// forward, 9 in the backward) is token t's position in its example, so its example starts at
// row position t - positions[b T + t], and query t sees keys t - positions[b T + t] .. t only.
// The kernels start their key (query) loops at the segment and stop them at its end, so the
// blocks of other examples cost nothing. segments 0: plain causal rows; the binding is a
// stand-in and is not read.
// window > 0: sliding-window attention (transformers' sliding_window), query t sees keys
// t - window + 1 .. t only (window keys, itself included), intersected with its example when
// packed. It bounds the same loops as the segments: the forward's key blocks start at the block
// holding the first row's window start, the backward's dk/dv query loop stops at the last query
// whose window holds the key, so blocks outside every row's window cost nothing. window 0 (or
// window >= T): all earlier keys.
struct AttentionParams {
  uint B;
  uint T;
  uint NH;
  uint KV;
  uint D4;
  float scale;
  uint accumulate;
  uint q_stride;  // in vec4s
  uint q_offset;
  uint k_stride;
  uint k_offset;
  uint v_stride;
  uint v_offset;
  uint segments;
  uint window;
};
REMAT_PUSH_WORDS(AttentionParams, 15)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_ATTENTION_PARAMS_H
