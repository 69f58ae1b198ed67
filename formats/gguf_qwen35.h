// Qwen3.5 in GGUF (llama.cpp's arch `qwen35`): tensor names between Hugging Face's and gguf-py's
// (constants.py MODEL_ARCH.QWEN35, tensor_mapping.py), the qwen35.* metadata keys, and the
// transforms llama.cpp's converter applies on the way (conversion/qwen.py, Qwen3_5TextModel and
// its bases _LinearAttentionVReorderBase and Qwen3NextModel), as pure functions. The reverse of
// each transform is here too, so remat can read such a file back into Hugging Face's layout.
//
// The converter, tensor by tensor (after casting bf16 to float32, conversion/base.py):
//   - value heads: where linear_num_value_heads > linear_num_key_heads, Hugging Face stores the
//     value heads grouped by the key head they read (key head g's r = value/key heads, then the
//     next g's); GGUF stores them tiled (value head v of every key head, then v + 1), so that
//     ggml broadcasts the key heads. It permutes the value rows of in_proj_qkv, the rows of
//     in_proj_z, in_proj_a, in_proj_b, the entries of A_log and dt_bias, the value channels of
//     conv1d, and the columns of out_proj. With equal head counts (Qwen3.5-0.8B and -2B) nothing
//     moves;
//   - A_log is stored as ssm_a = -exp(A_log);
//   - dt_bias is renamed to dt_proj.bias, hence blk.N.ssm_dt.bias;
//   - conv1d.weight [channels, 1, kernel] loses its middle axis;
//   - every weight whose name ends in norm.weight, but linear_attn.norm.weight, gets + 1: the
//     zero-centred gains (input_layernorm, post_attention_layernorm, q_norm, k_norm, the final
//     norm) become the gains themselves; the gated norm's weight already is one.
// Exactness: the names and the permutations round-trip bit for bit. + 1 then - 1 returns w when
// w + 1 is exact in float32, which holds for every bfloat16 w of magnitude at least 2^-16 and
// for 0 (a checkpoint's gains); -exp(A_log) and back through log is not exact in float32: ssm_a
// keeps A's relative precision (2^-24), which log turns into an absolute error, so A_log comes
// back within 2^-23 beyond its own rounding, many ulps where A_log is near 0
// (tests/formats/gguf_qwen35_test.cpp measures it).
//
// Multi-token-prediction tensors (Hugging Face mtp.*, GGUF blk.L.nextn.* and the block L after
// the trunk's L layers) are no parameter of remat's: formats/qwen35_mtp.h maps them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "graph/model_config.h"

namespace remat {

inline constexpr std::string_view kQwen35GgufArch = "qwen35";

// "model.layers.0.linear_attn.A_log" -> "blk.0.ssm_a"; nullopt for names with no counterpart.
std::optional<std::string> qwen35_gguf_tensor_name(std::string_view hf_name);
std::optional<std::string> qwen35_hf_tensor_name(std::string_view gguf_name);
// A multimodal (qwen3_5) checkpoint's text tensor under the text model's name:
// "model.language_model.X" -> "model.X", lm_head.weight as it is; nullopt for the vision tower
// (model.visual.*) and the MTP layers (mtp.*). Text-model names pass unchanged.
std::optional<std::string> qwen35_text_tensor_name(std::string_view checkpoint_name);

// Whether GGUF tensor `gguf_name` belongs to the trunk remat trains: a block of the first
// m.layers, or a tensor of no block (token_embd, output_norm, output). The MTP block's tensors
// (blk.N for N >= m.layers, its nextn.* among them) do not.
bool qwen35_trunk_tensor(std::string_view gguf_name, const ModelConfig& m);

// Hugging Face's shape of a conv1d weight ([channels, 1, kernel]) whose graph shape is
// [channels, kernel]; the values are in the same order.
std::vector<int64_t> qwen35_conv1d_file_shape(const std::vector<int64_t>& graph_shape);

// Whether the converter's transform of linear-attention tensor `hf_name` moves whole rows and
// changes no value, so that a quantized file's rows keep their blocks (QLoRA): in_proj_qkv,
// in_proj_z, in_proj_a and in_proj_b (value heads along rows) always; out_proj only when nothing
// moves (as many value heads as key heads, as in Qwen3.5-0.8B and -2B), its columns moving
// otherwise. A_log (stored as -exp) and the norms (+ 1) change values: false.
bool qwen35_moves_rows_only(std::string_view hf_name, const ModelConfig& m);
// The GGUF row holding row `hf_row` of Hugging Face tensor `hf_name` (of the first kind above).
uint64_t qwen35_gguf_row(std::string_view hf_name, uint64_t hf_row, const ModelConfig& m);

// The GGUF position of Hugging Face value head `head` (grouped by key head -> tiled), and back.
int qwen35_gguf_value_head(int head, int key_heads, int value_heads);
int qwen35_hf_value_head(int gguf_head, int key_heads, int value_heads);

// The values of Hugging Face tensor `hf_name` (row-major, shape `hf_shape`) as the converter
// writes them into GGUF (row-major again; conv1d's shape loses its middle axis), and the
// inverse. `m` gives the head counts; std::invalid_argument for a shape that does not fit them.
std::vector<float> qwen35_to_gguf(std::string_view hf_name, const std::vector<int64_t>& hf_shape,
                                  std::vector<float> values, const ModelConfig& m);
std::vector<float> qwen35_from_gguf(std::string_view hf_name, const std::vector<int64_t>& hf_shape,
                                    std::vector<float> values, const ModelConfig& m);

// The qwen35.* keys (and general.architecture) the converter writes for `m`: block_count counts
// the MTP layers too, with nextn_predict_layers saying how many; ssm.* the linear layers' shape
// (state_size the key head size, group_count the key heads, time_step_rank the value heads,
// inner_size all value channels); rope.dimension_count the rotated channels;
// rope.dimension_sections mrope_section padded to four.
GgufMetadata qwen35_gguf_metadata(const ModelConfig& m);
// The model those keys describe (vocab from qwen35.vocab_size, else `vocab`), validated;
// std::invalid_argument naming the key for anything remat cannot take (value heads of another
// size than key heads, which llama.cpp's loader cannot express either; a recurrent-layer list
// that is not every N-th layer full).
ModelConfig qwen35_model_config(const GgufMetadata& md, int vocab);

}  // namespace remat
