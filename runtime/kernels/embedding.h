// Dispatches for the token + position embedding, x = wte[token] + wpe[t].
#pragma once

#include <vector>

#include "graph/tensor.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct EmbeddingShape {
  uint32_t B = 0, T = 0, C = 0;
  uint32_t V = 0;    // rows of wte
  uint32_t ctx = 0;  // rows of wpe (>= T)
  // The tables' storage (forward only; a frozen base may be f16 or bf16): wte and wpe alike.
  DType table_dtype = DType::f32;
  DType x_dtype = DType::f32;  // x's storage: activations may be f16 or bf16
  // Without a position table: x = wte[token] · scale and dwte += dx · scale (Gemma's sqrt(C)).
  float scale = 1.0f;
};

// x[BT,C] from tokens[BT] (u32). When wte is larger than quirks.max_binding_bytes (GPT-2's is
// 154 MB against lavapipe's 128 MiB), it is bound in vocabulary pieces, one dispatch each; all
// pieces together write every element of x once. Tokens >= V give NaN rows. An empty wpe
// (no buffer) means no position table: x = wte[token] (token_embedding). `positions` (packed rows,
// [BT] u32) gives each token's wpe row; empty, row r reads wpe[r % T].
std::vector<Dispatch> embedding_forward(const DeviceQuirks& quirks, const EmbeddingShape& s,
                                        BufferSlice tokens, BufferSlice wte, BufferSlice wpe,
                                        BufferSlice x, BufferSlice positions = {});

// dwte[V,C] and dwpe[ctx,C] from dx[BT,C], deterministic without atomics (docs/ops.md): when
// overwriting, dwte rows without tokens and dwpe rows >= T become 0; when accumulating they are
// untouched. Pieces as for the forward. An empty dwpe means no position table; `positions` as
// for the forward.
std::vector<Dispatch> embedding_backward(const DeviceQuirks& quirks, const EmbeddingShape& s,
                                         BufferSlice tokens, BufferSlice dx, BufferSlice dwte,
                                         BufferSlice dwpe, bool accumulate_wte, bool accumulate_wpe,
                                         BufferSlice positions = {});

}  // namespace remat::kernels
