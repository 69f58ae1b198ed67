// The operand tables of Qwen3.5's op kinds (Gated DeltaNet and gated attention), apart from
// graph/op_schema.h's only for length. Included by graph/op_schema.h alone, after OperandSpec and
// its own tables: its kOpSchemas, slot constants and docs/ops.md table take these as they take
// the others.
#pragma once

namespace remat {
namespace schema_table {
inline constexpr OperandSpec causal_conv1d_in[] = {
    {"x", "[B,T,C]"}, {"weight", "[C,K]"}, {"positions", "[BT] u32", P::if_packed}};
inline constexpr OperandSpec causal_conv1d_out[] = {{"y", "[B,T,C]"}};
inline constexpr OperandSpec causal_conv1d_backward_in[] = {
    {"dy", ""}, {"x", ""}, {"weight", ""}, {"positions", "", P::if_packed}};
inline constexpr OperandSpec causal_conv1d_backward_out[] = {{"dx", ""},
                                                             {"dweight", "", P::if_trained}};
inline constexpr OperandSpec l2norm_in[] = {{"x", "[B,T,W]"}};
inline constexpr OperandSpec l2norm_out[] = {{"y", "[B,T,H·D]"}};
inline constexpr OperandSpec l2norm_backward_in[] = {{"dy", ""}, {"x", ""}};
inline constexpr OperandSpec l2norm_backward_out[] = {{"dx", ""}};
inline constexpr OperandSpec gdn_gates_in[] = {
    {"a", "[B,T,Hv]"}, {"b", "[B,T,Hv]"}, {"a_log", "[Hv]"}, {"dt_bias", "[Hv]"}};
inline constexpr OperandSpec gdn_gates_out[] = {{"g", "[B,T,Hv]"}, {"beta", "[B,T,Hv]"}};
inline constexpr OperandSpec gdn_gates_backward_in[] = {{"dg", ""}, {"dbeta", ""}, {"a", ""},
                                                        {"b", ""},  {"a_log", ""}, {"dt_bias", ""}};
inline constexpr OperandSpec gdn_gates_backward_out[] = {
    {"da", ""}, {"db", ""}, {"da_log", "", P::if_trained}, {"ddt_bias", "", P::if_trained}};
inline constexpr OperandSpec gated_rmsnorm_in[] = {
    {"o", "[B,T,Hv·Dv]"}, {"z", "[B,T,Hv·Dv]"}, {"weight", "[Dv]"}};
inline constexpr OperandSpec gated_rmsnorm_out[] = {{"y", "[B,T,Hv·Dv]"}, {"rstd", "[BT·Hv] f32"}};
inline constexpr OperandSpec gated_rmsnorm_backward_in[] = {
    {"dy", ""}, {"o", ""}, {"z", ""}, {"weight", ""}, {"rstd", ""}};
inline constexpr OperandSpec gated_rmsnorm_backward_out[] = {
    {"d_o", ""}, {"dz", ""}, {"dweight", "", P::if_trained}};
inline constexpr OperandSpec sigmoid_gate_in[] = {{"x", "[B,T,H·D]"}, {"gate", "[B,T,W]"}};
inline constexpr OperandSpec sigmoid_gate_out[] = {{"y", "[B,T,H·D]"}};
inline constexpr OperandSpec sigmoid_gate_backward_in[] = {{"dy", ""}, {"x", ""}, {"gate", ""}};
inline constexpr OperandSpec sigmoid_gate_backward_out[] = {{"dx", ""}, {"dgate", ""}};
inline constexpr OperandSpec gated_delta_state_in[] = {{"k", "[B,T,Hk·dk]"},
                                                       {"v", "[B,T,W]"},
                                                       {"g", "[B,T,Hv]"},
                                                       {"beta", "[B,T,Hv]"},
                                                       {"positions", "[BT] u32", P::if_packed}};
inline constexpr OperandSpec gated_delta_state_out[] = {{"states", "[N−1,B,Hv,dk,dv] f32"},
                                                        {"workspace", "[words] f32"}};
inline constexpr OperandSpec gated_delta_rule_in[] = {{"q", "[B,T,Hk·dk]"},
                                                      {"k", "[B,T,Hk·dk]"},
                                                      {"v", "[B,T,W]"},
                                                      {"g", "[B,T,Hv]"},
                                                      {"beta", "[B,T,Hv]"},
                                                      {"states", "", P::if_chunked},
                                                      {"positions", "[BT] u32", P::if_packed}};
inline constexpr OperandSpec gated_delta_rule_out[] = {{"o", "[B,T,Hv·dv]"},
                                                       {"workspace", "[words] f32"}};
inline constexpr OperandSpec gated_delta_rule_backward_in[] = {{"dout", ""},
                                                               {"q", ""},
                                                               {"k", ""},
                                                               {"v", ""},
                                                               {"g", ""},
                                                               {"beta", ""},
                                                               {"states", "", P::if_chunked},
                                                               {"positions", "", P::if_packed}};
inline constexpr OperandSpec gated_delta_rule_backward_out[] = {
    {"dq", ""}, {"dk", ""}, {"dv", ""}, {"dg", ""}, {"dbeta", ""}, {"workspace", "[words] f32"}};
}  // namespace schema_table
}  // namespace remat
