// The operand contract of every op kind: its named inputs and outputs in order, which are
// optional, and what they hold. graph/ builds ops by these names, the planner's checker validates
// arity against them, the runtime's lowering reads operands through them, and docs/ops.md's table
// is generated from them (`remat ops --markdown`), so the four cannot drift apart.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/op.h"

namespace remat {

struct OperandSpec {
  enum class Presence {
    required,
    if_bias,          // present exactly when OpAttrs::has_bias (matmul's bias)
    if_trained,       // present exactly when !OpAttrs::frozen (a weight's gradient and its reads)
    if_trained_bias,  // present exactly when has_bias && !frozen (the bias gradient)
    if_packed,        // present exactly when OpAttrs::packed (the rows' position ids)
    if_residual,      // present exactly when OpAttrs::adds_residual (a matmul's fused residual)
    if_chunked,       // present exactly when OpAttrs::chunk_len > 0 (the delta rule's states)
    variadic,         // zero or more tensors, last in the list (grad_norm's gradients)
  };
  std::string_view name;   // how code addresses it
  std::string_view shape;  // for docs/ops.md: "[BT,C]", "[BT] u32", or "" (as in the forward)
  Presence presence = Presence::required;
};

struct OpSchema {
  OpKind kind;
  std::span<const OperandSpec> inputs;   // in Op::inputs order
  std::span<const OperandSpec> outputs;  // in Op::outputs order
  std::string_view notes;                // semantics, for docs/ops.md
};

namespace schema_table {
using P = OperandSpec::Presence;
inline constexpr OperandSpec embedding_in[] = {{"tokens", "[BT] u32"},
                                               {"wte", "[V,C]"},
                                               {"wpe", "[ctx,C]"},
                                               {"positions", "[BT] u32", P::if_packed}};
inline constexpr OperandSpec embedding_out[] = {{"x", "[BT,C]"}};
inline constexpr OperandSpec embedding_backward_in[] = {
    {"tokens", ""}, {"dx", "[BT,C]"}, {"positions", "", P::if_packed}};
inline constexpr OperandSpec embedding_backward_out[] = {{"dwte", "[V,C]"}, {"dwpe", "[ctx,C]"}};
inline constexpr OperandSpec layernorm_in[] = {{"x", "[BT,C]"}, {"weight", "[C]"}, {"bias", "[C]"}};
inline constexpr OperandSpec layernorm_out[] = {
    {"y", "[BT,C]"}, {"mean", "[BT] f32"}, {"rstd", "[BT] f32"}};
inline constexpr OperandSpec layernorm_backward_in[] = {
    {"dy", ""}, {"x", ""}, {"weight", ""}, {"mean", ""}, {"rstd", ""}};
inline constexpr OperandSpec layernorm_backward_out[] = {
    {"dx", ""}, {"dweight", "", P::if_trained}, {"dbias", "", P::if_trained}};
inline constexpr OperandSpec matmul_in[] = {{"x", "[M,K]"},
                                            {"weight", "[K,N] or [N,K]"},
                                            {"bias", "[N]", P::if_bias},
                                            {"residual", "[M,N]", P::if_residual}};
inline constexpr OperandSpec matmul_out[] = {{"y", "[M,N]"}};
inline constexpr OperandSpec matmul_backward_in[] = {
    {"dy", "[M,N]"}, {"weight", ""}, {"x", "[M,K]", P::if_trained}};
inline constexpr OperandSpec matmul_backward_out[] = {
    {"dx", "[M,K]"}, {"dweight", "", P::if_trained}, {"dbias", "[N]", P::if_trained_bias}};
inline constexpr OperandSpec attention_in[] = {{"qkv", "[BT,3C]"},
                                               {"positions", "[BT] u32", P::if_packed}};
inline constexpr OperandSpec attention_out[] = {{"out", "[BT,C]"}, {"lse", "[B,NH,T] f32"}};
inline constexpr OperandSpec attention_backward_in[] = {
    {"dout", ""}, {"qkv", ""}, {"out", ""}, {"lse", ""}, {"positions", "", P::if_packed}};
inline constexpr OperandSpec attention_backward_out[] = {{"dqkv", "[BT,3C]"}};
inline constexpr OperandSpec gelu_in[] = {{"x", ""}};
inline constexpr OperandSpec gelu_out[] = {{"y", ""}};
inline constexpr OperandSpec gelu_backward_in[] = {{"dy", ""}, {"x", ""}};
inline constexpr OperandSpec gelu_backward_out[] = {{"dx", ""}};
inline constexpr OperandSpec residual_in[] = {{"a", ""}, {"b", ""}};
inline constexpr OperandSpec residual_out[] = {{"y", ""}};
inline constexpr OperandSpec residual_backward_in[] = {{"dy", ""}};
inline constexpr OperandSpec residual_backward_out[] = {{"da", ""}, {"db", ""}};
inline constexpr OperandSpec dropout_in[] = {{"x", ""}};
inline constexpr OperandSpec dropout_out[] = {{"y", ""}};
inline constexpr OperandSpec dropout_backward_in[] = {{"dy", ""}};
inline constexpr OperandSpec dropout_backward_out[] = {{"dx", ""}};
inline constexpr OperandSpec cross_entropy_in[] = {{"logits", "[BT,V]"}, {"targets", "[BT] u32"}};
inline constexpr OperandSpec cross_entropy_out[] = {{"losses", "[BT] f32"}};
inline constexpr OperandSpec cross_entropy_backward_in[] = {{"logits", ""}, {"targets", ""}};
inline constexpr OperandSpec cross_entropy_backward_out[] = {{"dlogits", "[BT,V]"}};
inline constexpr OperandSpec token_embedding_in[] = {{"tokens", "[BT] u32"}, {"wte", "[V,C]"}};
inline constexpr OperandSpec token_embedding_out[] = {{"x", "[BT,C]"}};
inline constexpr OperandSpec token_embedding_backward_in[] = {{"tokens", ""}, {"dx", "[BT,C]"}};
inline constexpr OperandSpec token_embedding_backward_out[] = {{"dwte", "[V,C]"}};
inline constexpr OperandSpec rmsnorm_in[] = {{"x", "[BT,C]"}, {"weight", "[C]"}};
inline constexpr OperandSpec rmsnorm_out[] = {{"y", "[BT,C]"}, {"rstd", "[BT] f32"}};
inline constexpr OperandSpec rmsnorm_backward_in[] = {
    {"dy", ""}, {"x", ""}, {"weight", ""}, {"rstd", ""}};
inline constexpr OperandSpec rmsnorm_backward_out[] = {{"dx", ""}, {"dweight", "", P::if_trained}};
inline constexpr OperandSpec rope_in[] = {{"x", "[B,T,H·D]"},
                                          {"positions", "[BT] u32", P::if_packed}};
inline constexpr OperandSpec rope_out[] = {{"y", "[B,T,H·D]"}};
inline constexpr OperandSpec rope_backward_in[] = {{"dy", ""}, {"positions", "", P::if_packed}};
inline constexpr OperandSpec rope_backward_out[] = {{"dx", ""}};
inline constexpr OperandSpec gqa_attention_in[] = {{"q", "[B,T,NH·D]"},
                                                   {"k", "[B,T,KV·D]"},
                                                   {"v", "[B,T,KV·D]"},
                                                   {"positions", "[BT] u32", P::if_packed}};
inline constexpr OperandSpec gqa_attention_out[] = {{"out", "[B,T,NH·D]"}, {"lse", "[B,NH,T] f32"}};
inline constexpr OperandSpec gqa_attention_backward_in[] = {{"dout", ""},
                                                            {"q", ""},
                                                            {"k", ""},
                                                            {"v", ""},
                                                            {"out", ""},
                                                            {"lse", ""},
                                                            {"positions", "", P::if_packed}};
inline constexpr OperandSpec gqa_attention_backward_out[] = {{"dq", ""}, {"dk", ""}, {"dv", ""}};
inline constexpr OperandSpec swiglu_in[] = {{"gate", "[BT,F]"}, {"up", "[BT,F]"}};
inline constexpr OperandSpec swiglu_out[] = {{"h", "[BT,F]"}};
inline constexpr OperandSpec swiglu_backward_in[] = {{"dh", ""}, {"gate", ""}, {"up", ""}};
inline constexpr OperandSpec swiglu_backward_out[] = {{"dgate", ""}, {"dup", ""}};
inline constexpr OperandSpec head_loss_in[] = {
    {"x", "[BT,C]"}, {"weight", "[V,C]"}, {"targets", "[BT] u32"}};
inline constexpr OperandSpec head_loss_out[] = {{"losses", "[BT] f32"}, {"logits", "[R,V]"}};
inline constexpr OperandSpec head_loss_backward_in[] = {{"x", ""}, {"weight", ""}, {"targets", ""}};
// dweight last: a frozen head weight leaves it out, and the slots before it stay put.
inline constexpr OperandSpec head_loss_backward_out[] = {
    {"dx", "[BT,C]"}, {"dlogits", "[R,V]"}, {"dweight", "[V,C]", P::if_trained}};
inline constexpr OperandSpec grad_norm_in[] = {{"grads", "every parameter gradient", P::variadic}};
inline constexpr OperandSpec grad_norm_out[] = {{"norm", "[2] f32"}};
inline constexpr OperandSpec adamw_in[] = {
    {"param", ""}, {"grad", ""}, {"m", ""}, {"v", ""}, {"grad_norm", "[2] f32"}};
inline constexpr OperandSpec adamw_out[] = {{"param", ""}, {"m", ""}, {"v", ""}};
}  // namespace schema_table
}  // namespace remat

#include "graph/op_schema_qwen35.h"

namespace remat {

#define REMAT_SCHEMA(kind, notes)                                          \
  OpSchema {                                                               \
    OpKind::kind, schema_table::kind##_in, schema_table::kind##_out, notes \
  }

inline constexpr OpSchema kOpSchemas[] = {
    REMAT_SCHEMA(embedding, "x = wte[token] + wpe[t], t the row position or, packed, positions[r]"),
    REMAT_SCHEMA(embedding_backward,
                 "deterministic: no atomics; rows of dwpe ≥ T are written 0 when overwriting; dwte "
                 "rows without tokens untouched when accumulating, 0 when overwriting"),
    REMAT_SCHEMA(layernorm, "eps 1e-5 (attribute), biased variance"),
    REMAT_SCHEMA(layernorm_backward,
                 "dweight and dbias share one accumulate flag; a frozen weight (`frozen`) has "
                 "neither"),
    REMAT_SCHEMA(matmul,
                 "weight layout attribute: `in_out` [K,N] (HF Conv1D) or `out_in` [N,K] (tied "
                 "head); bias present iff `has_bias`; with `adds_residual` y = residual + x·W "
                 "(+ bias), a residual op fused in (graph/residual_fusion.h): the residual's "
                 "gradient is dy's own tensor"),
    REMAT_SCHEMA(matmul_backward,
                 "one op, may lower to separate dx and dweight/dbias dispatches; dbias present iff "
                 "`has_bias`; a frozen weight (`frozen`): dx only, x not read"),
    REMAT_SCHEMA(attention,
                 "causal, scale 1/√(C/NH) or `attn_scale` when not 0, flash-style: never stores "
                 "T×T; B and T are read from lse; packed: block-diagonal, query t sees keys "
                 "t − positions[t] … t only; `window` w > 0: query t sees keys t − w + 1 … t "
                 "only (with packing, of its example), blocks outside skipped"),
    REMAT_SCHEMA(attention_backward,
                 "recomputes probabilities from q, k and lse; the forward's `window` and "
                 "`attn_scale`"),
    REMAT_SCHEMA(gelu, "tanh approximation (GPT-2)"),
    REMAT_SCHEMA(gelu_backward, ""),
    REMAT_SCHEMA(residual, "y = a + scale·b (`scale` attribute, 1 but for LoRA's alpha/r)"),
    REMAT_SCHEMA(
        residual_backward,
        "da = dy, db = scale·dy, each output with its own accumulate flag; emitted only where "
        "autodiff cannot forward dy itself as both gradients (scale ≠ 1: a LoRA merge)"),
    REMAT_SCHEMA(
        dropout,
        "mask from counter RNG keyed (seed, step, op id, element); p = 0 is an identity op "
        "the builder omits"),
    REMAT_SCHEMA(dropout_backward, "regenerates the same mask"),
    REMAT_SCHEMA(cross_entropy,
                 "fused stable log-softmax; 0 where the target is ignored (0xFFFFFFFF); mean over "
                 "the trained targets taken by the reader"),
    REMAT_SCHEMA(
        cross_entropy_backward,
        "dlogits = (softmax − onehot)/N, N the trained targets of the whole optimizer step "
        "(read from a buffer the host rewrites before each step); 0 on ignored rows"),
    REMAT_SCHEMA(token_embedding,
                 "x = scale·wte[token] (`scale` attribute: 1, Gemma's √C); no position table (the "
                 "Llama family rotates q and k instead)"),
    REMAT_SCHEMA(token_embedding_backward,
                 "deterministic as embedding_backward: dwte rows without tokens untouched when "
                 "accumulating, 0 when overwriting"),
    REMAT_SCHEMA(rmsnorm,
                 "y = x·rstd·weight, rstd = 1/√(mean(x²) + eps) over rows as long as the weight "
                 "(Qwen3's q/k norms: x [B,T,H·D] as B·T·H rows of D); eps attribute; "
                 "`norm_offset`: the gain is 1 + weight (Gemma); x wider than y (Qwen3.5's q in "
                 "q_proj's [q | gate] per head): row k's D floats read in place at k·(W/`heads`) "
                 "+ `slice_offset`, dx written there only"),
    REMAT_SCHEMA(rmsnorm_backward, "dx and dweight each with their own accumulate flag"),
    REMAT_SCHEMA(rope,
                 "rotary position embedding (Hugging Face rotate_half) of each of `heads` heads "
                 "of size D at position t (packed: positions[t]), angle t·theta^(−2i/D), scaled as "
                 "Llama 3 scales it when `rope_llama3` is set; `rope_theta` attribute; "
                 "`rotary_dims` R > 0: only each head's first R elements turn, pairs (i, i + R/2) "
                 "at angle t·theta^(−2i/R), the other D − R are copied (partial RoPE)"),
    REMAT_SCHEMA(rope_backward, "rotation by the negative angle"),
    REMAT_SCHEMA(gqa_attention,
                 "causal grouped-query attention, scale 1/√D or `attn_scale` when not 0: query "
                 "head h reads key/value head h/(NH/KV); attributes `heads` NH and `kv_heads` KV; "
                 "never stores T×T; packed: block-diagonal as attention; `window` as attention "
                 "(Gemma 3's local layers)"),
    REMAT_SCHEMA(gqa_attention_backward,
                 "dq, dk and dv share one accumulate flag; recomputes probabilities from q, k "
                 "and lse; the forward's `window` and `attn_scale`"),
    REMAT_SCHEMA(swiglu,
                 "h = silu(gate)·up (Llama's MLP activation); `gelu_gate`: h = gelu(gate)·up "
                 "with the tanh GELU (GeGLU, Gemma)"),
    REMAT_SCHEMA(swiglu_backward, "dgate and dup each with their own accumulate flag"),
    REMAT_SCHEMA(head_loss,
                 "LM head and cross-entropy over row chunks of R = `chunk_rows` rows: logits[R,V] "
                 "is a workspace holding one chunk's logits at a time; losses as cross_entropy"),
    REMAT_SCHEMA(head_loss_backward,
                 "per chunk: recomputes the logits, turns them into dlogits in place (scale as "
                 "cross_entropy_backward), writes the chunk's dx rows and adds its dweight (the "
                 "first chunk overwrites or adds as the flag says, later chunks add); dlogits[R,V] "
                 "is a workspace; a frozen weight (`frozen`): dx only, no dweight"),
    REMAT_SCHEMA(grad_norm,
                 "norm[0]: global L2 norm, deterministic fixed-order sum of squares; norm[1]: the "
                 "clip scale AdamW multiplies gradients by"),
    REMAT_SCHEMA(adamw,
                 "in place: outputs are the param, m and v inputs; step, lr, betas, eps, weight "
                 "decay come from a buffer the host rewrites before each step; PyTorch semantics, "
                 "weight decay "
                 "only on 2-D params"),
    REMAT_SCHEMA(causal_conv1d,
                 "depthwise causal conv over T, K = weight's taps, then SiLU, no bias: y[t,c] = "
                 "silu(Σ_k w[c,k]·x[t−(K−1)+k, c]); taps before the token's example read 0 "
                 "(packed: t − positions[t]), so the window restarts at every position 0"),
    REMAT_SCHEMA(
        causal_conv1d_backward,
        "pre-activations recomputed; dx and dweight separate dispatches, each with its own "
        "accumulate flag; a frozen weight (`frozen`): dx only"),
    REMAT_SCHEMA(l2norm,
                 "y = x·scale/√(Σx² + eps) per head of D = |y|/`heads` floats; x read in place: "
                 "head h of token t at t·W + `slice_offset` + h·D; `scale` (1/√D for Gated "
                 "DeltaNet's q, 1 for k), `eps`"),
    REMAT_SCHEMA(l2norm_backward,
                 "dx = scale·r·(dy − n·Σ(dy·n)), n = x·r, r recomputed; written at x's places "
                 "only, the rest of dx untouched"),
    REMAT_SCHEMA(gdn_gates,
                 "g = −exp(a_log)·softplus(a + dt_bias) (PyTorch's softplus, threshold 20), "
                 "beta = sigmoid(b), per value head"),
    REMAT_SCHEMA(gdn_gates_backward,
                 "da and db each with their own flag; da_log[h] = Σ dg·g and ddt_bias[h] = Σ da "
                 "in a fixed order, sharing one flag; a frozen a_log and dt_bias (`frozen`): da "
                 "and db only"),
    REMAT_SCHEMA(gated_rmsnorm,
                 "y = o·rstd·weight·silu(z) per row of Dv = |weight| floats, rstd = 1/√(mean(o²) + "
                 "eps); the weight as stored, not 1 + weight"),
    REMAT_SCHEMA(gated_rmsnorm_backward,
                 "d_o and dz in one dispatch, dweight (a fixed-order sum over rows) in another; "
                 "each output its own flag"),
    REMAT_SCHEMA(sigmoid_gate,
                 "y = x·sigmoid(gate), x dense [B,T,H·D] (`heads` H); the gate read in place: "
                 "head row k's D floats at k·(W/H) + `slice_offset` (q_proj's [q | gate] per "
                 "head: W = 2HD, offset D)"),
    REMAT_SCHEMA(sigmoid_gate_backward,
                 "dx = dy·s, dgate = dy·x·s·(1 − s), s = sigmoid(gate); dgate written at the "
                 "gate's places only; each output its own flag"),
    REMAT_SCHEMA(
        gated_delta_state,
        "the delta rule's state at the start of each chunk of `chunk_len` L tokens but "
        "the first (which is 0): N = ⌈T/L⌉ chunks; the recurrence as gated_delta_rule, o "
        "not written; chunk by chunk in chunkwise (WY) form through the workspace, sized for "
        "one chunk by graph/delta_rule_workspace.h. A checkpoint of gated_delta_rule's "
        "own recurrence: no backward (gated_delta_rule_backward carries the state "
        "gradient across chunks)"),
    REMAT_SCHEMA(gated_delta_rule,
                 "per value head j (key head j/(Hv/Hk)): S_t = e^{g_t}·S_{t−1} + "
                 "β_t·k_t·(v_t − e^{g_t}·S_{t−1}ᵀk_t)ᵀ, o_t = S_tᵀq_t, S [dk,dv], 0 at every "
                 "position 0 (packed: every example restarts); v read in place: token t's Hv·dv "
                 "floats at t·W + `slice_offset`; `chunk_len` L > 0: chunk c starts from "
                 "states[c−1] (chunks independent), the same bits as one chunk; L a multiple of 64 "
                 "(the chunkwise form's blocks); the workspace holds one chunk's chunkwise "
                 "scratch (graph/delta_rule_workspace.h); `heads` Hv, `kv_heads` Hk"),
    REMAT_SCHEMA(gated_delta_rule_backward,
                 "chunks in reverse, the state gradient carried across them; each chunk's states "
                 "recomputed from its start state into the workspace, sized for one chunk of L "
                 "= `chunk_len` (or T) steps by graph/delta_rule_workspace.h (the chunkwise "
                 "backward's three scratch buffers, two state-gradient carries); dv written at "
                 "v's places only; every output overwritten"),
};
#undef REMAT_SCHEMA

constexpr const OpSchema& op_schema(OpKind kind) {
  for (const OpSchema& s : kOpSchemas)
    if (s.kind == kind) return s;
  throw std::logic_error("op kind without a schema");
}

constexpr std::size_t operand_slot(std::span<const OperandSpec> list, std::string_view name) {
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) return i;
  throw std::logic_error("no such operand");
}
// Whether the kind reads the packed rows' positions (an input present iff OpAttrs::packed).
constexpr bool takes_positions(OpKind kind) {
  for (const OperandSpec& o : op_schema(kind).inputs)
    if (o.presence == OperandSpec::Presence::if_packed) return true;
  return false;
}

// Slot of a named operand, resolved at compile time: an unknown name does not compile.
consteval std::size_t input_slot(OpKind kind, std::string_view name) {
  return operand_slot(op_schema(kind).inputs, name);
}
consteval std::size_t output_slot(OpKind kind, std::string_view name) {
  return operand_slot(op_schema(kind).outputs, name);
}

// Named slot constants, one namespace per kind: slot::matmul::weight is matmul's input "weight",
// slot::matmul::y its output, slot::matmul::kind the kind. Each constant is looked up in the table
// above by its own name.
#define REMAT_IN(name) inline constexpr std::size_t name = input_slot(kind, #name);
#define REMAT_OUT(name) inline constexpr std::size_t name = output_slot(kind, #name);
// clang-format off
namespace slot {
namespace embedding {
inline constexpr OpKind kind = OpKind::embedding;
REMAT_IN(tokens) REMAT_IN(wte) REMAT_IN(wpe) REMAT_IN(positions)
REMAT_OUT(x)
}  // namespace embedding
namespace embedding_backward {
inline constexpr OpKind kind = OpKind::embedding_backward;
REMAT_IN(tokens) REMAT_IN(dx) REMAT_IN(positions)
REMAT_OUT(dwte) REMAT_OUT(dwpe)
}  // namespace embedding_backward
namespace layernorm {
inline constexpr OpKind kind = OpKind::layernorm;
REMAT_IN(x) REMAT_IN(weight) REMAT_IN(bias)
REMAT_OUT(y) REMAT_OUT(mean) REMAT_OUT(rstd)
}  // namespace layernorm
namespace layernorm_backward {
inline constexpr OpKind kind = OpKind::layernorm_backward;
REMAT_IN(dy) REMAT_IN(x) REMAT_IN(weight) REMAT_IN(mean) REMAT_IN(rstd)
REMAT_OUT(dx) REMAT_OUT(dweight) REMAT_OUT(dbias)
}  // namespace layernorm_backward
namespace matmul {
inline constexpr OpKind kind = OpKind::matmul;
REMAT_IN(x) REMAT_IN(weight) REMAT_IN(bias)
REMAT_OUT(y)
}  // namespace matmul
namespace matmul_backward {
inline constexpr OpKind kind = OpKind::matmul_backward;
REMAT_IN(dy) REMAT_IN(weight) REMAT_IN(x)
REMAT_OUT(dx) REMAT_OUT(dweight) REMAT_OUT(dbias)
}  // namespace matmul_backward
namespace attention {
inline constexpr OpKind kind = OpKind::attention;
REMAT_IN(qkv) REMAT_IN(positions)
REMAT_OUT(out) REMAT_OUT(lse)
}  // namespace attention
namespace attention_backward {
inline constexpr OpKind kind = OpKind::attention_backward;
REMAT_IN(dout) REMAT_IN(qkv) REMAT_IN(out) REMAT_IN(lse) REMAT_IN(positions)
REMAT_OUT(dqkv)
}  // namespace attention_backward
namespace gelu {
inline constexpr OpKind kind = OpKind::gelu;
REMAT_IN(x)
REMAT_OUT(y)
}  // namespace gelu
namespace gelu_backward {
inline constexpr OpKind kind = OpKind::gelu_backward;
REMAT_IN(dy) REMAT_IN(x)
REMAT_OUT(dx)
}  // namespace gelu_backward
namespace residual {
inline constexpr OpKind kind = OpKind::residual;
REMAT_IN(a) REMAT_IN(b)
REMAT_OUT(y)
}  // namespace residual
namespace residual_backward {
inline constexpr OpKind kind = OpKind::residual_backward;
REMAT_IN(dy)
REMAT_OUT(da) REMAT_OUT(db)
}  // namespace residual_backward
namespace dropout {
inline constexpr OpKind kind = OpKind::dropout;
REMAT_IN(x)
REMAT_OUT(y)
}  // namespace dropout
namespace dropout_backward {
inline constexpr OpKind kind = OpKind::dropout_backward;
REMAT_IN(dy)
REMAT_OUT(dx)
}  // namespace dropout_backward
namespace cross_entropy {
inline constexpr OpKind kind = OpKind::cross_entropy;
REMAT_IN(logits) REMAT_IN(targets)
REMAT_OUT(losses)
}  // namespace cross_entropy
namespace cross_entropy_backward {
inline constexpr OpKind kind = OpKind::cross_entropy_backward;
REMAT_IN(logits) REMAT_IN(targets)
REMAT_OUT(dlogits)
}  // namespace cross_entropy_backward
namespace token_embedding {
inline constexpr OpKind kind = OpKind::token_embedding;
REMAT_IN(tokens) REMAT_IN(wte)
REMAT_OUT(x)
}  // namespace token_embedding
namespace token_embedding_backward {
inline constexpr OpKind kind = OpKind::token_embedding_backward;
REMAT_IN(tokens) REMAT_IN(dx)
REMAT_OUT(dwte)
}  // namespace token_embedding_backward
namespace rmsnorm {
inline constexpr OpKind kind = OpKind::rmsnorm;
REMAT_IN(x) REMAT_IN(weight)
REMAT_OUT(y) REMAT_OUT(rstd)
}  // namespace rmsnorm
namespace rmsnorm_backward {
inline constexpr OpKind kind = OpKind::rmsnorm_backward;
REMAT_IN(dy) REMAT_IN(x) REMAT_IN(weight) REMAT_IN(rstd)
REMAT_OUT(dx) REMAT_OUT(dweight)
}  // namespace rmsnorm_backward
namespace rope {
inline constexpr OpKind kind = OpKind::rope;
REMAT_IN(x) REMAT_IN(positions)
REMAT_OUT(y)
}  // namespace rope
namespace rope_backward {
inline constexpr OpKind kind = OpKind::rope_backward;
REMAT_IN(dy) REMAT_IN(positions)
REMAT_OUT(dx)
}  // namespace rope_backward
namespace gqa_attention {
inline constexpr OpKind kind = OpKind::gqa_attention;
REMAT_IN(q) REMAT_IN(k) REMAT_IN(v) REMAT_IN(positions)
REMAT_OUT(out) REMAT_OUT(lse)
}  // namespace gqa_attention
namespace gqa_attention_backward {
inline constexpr OpKind kind = OpKind::gqa_attention_backward;
REMAT_IN(dout) REMAT_IN(q) REMAT_IN(k) REMAT_IN(v) REMAT_IN(out) REMAT_IN(lse) REMAT_IN(positions)
REMAT_OUT(dq) REMAT_OUT(dk) REMAT_OUT(dv)
}  // namespace gqa_attention_backward
namespace swiglu {
inline constexpr OpKind kind = OpKind::swiglu;
REMAT_IN(gate) REMAT_IN(up)
REMAT_OUT(h)
}  // namespace swiglu
namespace swiglu_backward {
inline constexpr OpKind kind = OpKind::swiglu_backward;
REMAT_IN(dh) REMAT_IN(gate) REMAT_IN(up)
REMAT_OUT(dgate) REMAT_OUT(dup)
}  // namespace swiglu_backward
namespace head_loss {
inline constexpr OpKind kind = OpKind::head_loss;
REMAT_IN(x) REMAT_IN(weight) REMAT_IN(targets)
REMAT_OUT(losses) REMAT_OUT(logits)
}  // namespace head_loss
namespace head_loss_backward {
inline constexpr OpKind kind = OpKind::head_loss_backward;
REMAT_IN(x) REMAT_IN(weight) REMAT_IN(targets)
REMAT_OUT(dx) REMAT_OUT(dlogits) REMAT_OUT(dweight)
}  // namespace head_loss_backward
namespace grad_norm {
inline constexpr OpKind kind = OpKind::grad_norm;
REMAT_IN(grads)
REMAT_OUT(norm)
}  // namespace grad_norm
namespace adamw {
inline constexpr OpKind kind = OpKind::adamw;
REMAT_IN(param) REMAT_IN(grad) REMAT_IN(m) REMAT_IN(v) REMAT_IN(grad_norm)
// The outputs are the param, m and v inputs updated in place; named apart from them.
inline constexpr std::size_t param_out = output_slot(kind, "param");
inline constexpr std::size_t m_out = output_slot(kind, "m");
inline constexpr std::size_t v_out = output_slot(kind, "v");
}  // namespace adamw
namespace causal_conv1d {
inline constexpr OpKind kind = OpKind::causal_conv1d;
REMAT_IN(x) REMAT_IN(weight) REMAT_IN(positions)
REMAT_OUT(y)
}  // namespace causal_conv1d
namespace causal_conv1d_backward {
inline constexpr OpKind kind = OpKind::causal_conv1d_backward;
REMAT_IN(dy) REMAT_IN(x) REMAT_IN(weight) REMAT_IN(positions)
REMAT_OUT(dx) REMAT_OUT(dweight)
}  // namespace causal_conv1d_backward
namespace l2norm {
inline constexpr OpKind kind = OpKind::l2norm;
REMAT_IN(x)
REMAT_OUT(y)
}  // namespace l2norm
namespace l2norm_backward {
inline constexpr OpKind kind = OpKind::l2norm_backward;
REMAT_IN(dy) REMAT_IN(x)
REMAT_OUT(dx)
}  // namespace l2norm_backward
namespace gdn_gates {
inline constexpr OpKind kind = OpKind::gdn_gates;
REMAT_IN(a) REMAT_IN(b) REMAT_IN(a_log) REMAT_IN(dt_bias)
REMAT_OUT(g) REMAT_OUT(beta)
}  // namespace gdn_gates
namespace gdn_gates_backward {
inline constexpr OpKind kind = OpKind::gdn_gates_backward;
REMAT_IN(dg) REMAT_IN(dbeta) REMAT_IN(a) REMAT_IN(b) REMAT_IN(a_log) REMAT_IN(dt_bias)
REMAT_OUT(da) REMAT_OUT(db) REMAT_OUT(da_log) REMAT_OUT(ddt_bias)
}  // namespace gdn_gates_backward
namespace gated_rmsnorm {
inline constexpr OpKind kind = OpKind::gated_rmsnorm;
REMAT_IN(o) REMAT_IN(z) REMAT_IN(weight)
REMAT_OUT(y) REMAT_OUT(rstd)
}  // namespace gated_rmsnorm
namespace gated_rmsnorm_backward {
inline constexpr OpKind kind = OpKind::gated_rmsnorm_backward;
REMAT_IN(dy) REMAT_IN(o) REMAT_IN(z) REMAT_IN(weight) REMAT_IN(rstd)
REMAT_OUT(d_o) REMAT_OUT(dz) REMAT_OUT(dweight)
}  // namespace gated_rmsnorm_backward
namespace sigmoid_gate {
inline constexpr OpKind kind = OpKind::sigmoid_gate;
REMAT_IN(x) REMAT_IN(gate)
REMAT_OUT(y)
}  // namespace sigmoid_gate
namespace sigmoid_gate_backward {
inline constexpr OpKind kind = OpKind::sigmoid_gate_backward;
REMAT_IN(dy) REMAT_IN(x) REMAT_IN(gate)
REMAT_OUT(dx) REMAT_OUT(dgate)
}  // namespace sigmoid_gate_backward
namespace gated_delta_state {
inline constexpr OpKind kind = OpKind::gated_delta_state;
REMAT_IN(k) REMAT_IN(v) REMAT_IN(g) REMAT_IN(beta) REMAT_IN(positions)
REMAT_OUT(states) REMAT_OUT(workspace)
}  // namespace gated_delta_state
// states is present only when chunk_len > 0 and positions only when packed: a packed op's
// positions are its last input (as everywhere), not at a fixed slot.
namespace gated_delta_rule {
inline constexpr OpKind kind = OpKind::gated_delta_rule;
REMAT_IN(q) REMAT_IN(k) REMAT_IN(v) REMAT_IN(g) REMAT_IN(beta) REMAT_IN(states)
REMAT_OUT(o) REMAT_OUT(workspace)
}  // namespace gated_delta_rule
namespace gated_delta_rule_backward {
inline constexpr OpKind kind = OpKind::gated_delta_rule_backward;
REMAT_IN(dout) REMAT_IN(q) REMAT_IN(k) REMAT_IN(v) REMAT_IN(g) REMAT_IN(beta) REMAT_IN(states)
REMAT_OUT(dq) REMAT_OUT(dk) REMAT_OUT(dv) REMAT_OUT(dg) REMAT_OUT(dbeta) REMAT_OUT(workspace)
}  // namespace gated_delta_rule_backward
}  // namespace slot
// clang-format on
#undef REMAT_IN
#undef REMAT_OUT

// Empty when `inputs` and `outputs` operands fit the kind's schema (optional operands present
// exactly when the attributes say so); otherwise one line saying what was expected.
std::string check_operand_arity(OpKind kind, const OpAttrs& attrs, std::size_t inputs,
                                std::size_t outputs);

// Operand lists built by name: each (name, tensor) pair lands in its schema slot. Unknown names,
// a name given twice, or a required operand left out are std::logic_error (a graph-building bug).
std::vector<TensorId> named_operands(OpKind kind, bool outputs,
                                     std::span<const std::pair<std::string_view, TensorId>> named);
inline std::vector<TensorId> named_operands(
    OpKind kind, bool outputs, std::initializer_list<std::pair<std::string_view, TensorId>> named) {
  return named_operands(kind, outputs, std::span(named.begin(), named.size()));
}

// The operand at `slot`, or kNoTensor where an optional operand is absent.
inline TensorId operand_or_none(const std::vector<TensorId>& list, std::size_t slot) {
  return slot < list.size() ? list[slot] : kNoTensor;
}

// A matmul's fused residual (OpAttrs::adds_residual): its last input, after the bias when there
// is one (so not at a fixed slot); kNoTensor without one.
inline TensorId matmul_residual(const Op& op) {
  return op.kind == OpKind::matmul && op.attrs.adds_residual ? op.inputs.back() : kNoTensor;
}

// docs/ops.md's operand table (Markdown), generated from kOpSchemas.
std::string op_schema_markdown();

}  // namespace remat
