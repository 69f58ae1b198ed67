// Qwen3.5's multi-token-prediction (MTP) layers between a Hugging Face checkpoint and GGUF, as
// llama.cpp's converter maps them (conversion/qwen.py: _QwenMtpMixin.filter_tensors renames,
// Qwen3NextModel.modify_tensors transforms, conversion/base.py picks the types), so that the MTP
// layers remat does not train cross formats with the trunk it does. With L the trunk's layers:
//   mtp.fc.weight                      <-> blk.L.nextn.eh_proj.weight
//   mtp.pre_fc_norm_embedding.weight   <-> blk.L.nextn.enorm.weight
//   mtp.pre_fc_norm_hidden.weight      <-> blk.L.nextn.hnorm.weight
//   mtp.norm.weight                    <-> blk.L.nextn.shared_head_norm.weight
//   mtp.layers.i.<block tensor>        <-> blk.(L+i).<its GGUF name> (formats/gguf_qwen35.h:
//                                          a full-attention block, attn_q, ffn_up, ...)
// The converter renames first (fc, the three norms to model.layers.L.eh_proj, .enorm, .hnorm,
// .shared_head.norm; mtp.layers.i to model.layers.(L+i)), then transforms by the new name, so
// every MTP tensor whose new name ends in norm.weight gets + 1: enorm, hnorm, shared_head_norm
// and each MTP block's input/post-attention, q and k norms (llama.cpp's MTP graph multiplies by
// those gains: src/models/qwen35.cpp, graph_mtp). Nothing else changes value; no MTP tensor is a
// linear-attention one, so no value head moves. Shapes are Hugging Face's, reversed as ggml
// orders dimensions. qwen35.nextn_predict_layers counts the MTP layers; block_count counts them
// too (formats/gguf_qwen35.h).
//
// Types. The converter writes every one-dimensional tensor F32 (base.py: "n_dims <= 1"), the
// matrices in its --outtype. remat writes each MTP matrix in the dtype it was read in (F16 as
// f16, BF16 as bf16, F32 and anything else as f32): MTP layers are passed through, never trained,
// so no --save-dtype rounds them. Back from GGUF, f16 is F16, bf16 BF16, f32 and every quantized
// type (decoded as ggml does) F32. A vector's dtype, which the f32 it becomes in GGUF forgets, is
// kept in one extra key, kQwen35MtpDtypesKey, listing "<gguf name>=<dtype>" for each MTP tensor
// whose Hugging Face dtype is not the one its GGUF type maps back to; llama.cpp ignores the key.
// The + 1 is added in float32 (the converter adds it in the tensor's own type when that is F16).
//
// Exactness. folder -> GGUF -> folder gives back each mtp.* tensor's bytes when its values
// survive the trip: F32, F16 and BF16 matrices always; a norm when w + 1 is exact in float32,
// which holds for 0 and every bfloat16 w of magnitude from 2^-16 to 2^24, every float16 one from
// 2^-13. GGUF -> folder -> GGUF gives back each nextn.* / MTP block tensor's bytes when it
// is F32, F16 or BF16 and, for a norm, x - 1 is exact in float32 (every x >= 0.5 below 2^24, and
// every x the converter made from a bfloat16 gain). A quantized MTP tensor comes back as f32.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_model_writer.h"
#include "formats/safetensors.h"
#include "graph/model_config.h"

namespace remat {

// String array, "<gguf tensor name>=<safetensors dtype>" per entry (see above).
inline constexpr std::string_view kQwen35MtpDtypesKey = "remat.qwen35.mtp_dtypes";

// "mtp.fc.weight" -> "blk.L.nextn.eh_proj.weight" for a trunk of m.layers = L; nullopt for a
// name that is no MTP tensor the converter maps.
std::optional<std::string> qwen35_mtp_gguf_name(std::string_view hf_name, const ModelConfig& m);
// The inverse: a tensor of block L or later (see qwen35_trunk_tensor) -> its mtp.* name; nullopt
// for one the converter never writes (nextn.embed_tokens, nextn.shared_head_head, ...).
std::optional<std::string> qwen35_mtp_hf_name(std::string_view gguf_name, const ModelConfig& m);

// The checks of the two conversions below, on names, shapes and types alone (no value is
// converted), so that a save can be refused before training: std::invalid_argument as they throw.
void check_qwen35_mtp_to_gguf(const std::vector<NamedTensor>& mtp, const ModelConfig& m);
void check_qwen35_mtp_from_gguf(const std::vector<GgufRawTensor>& gguf, const ModelConfig& m);

// The MTP tensors of a Hugging Face checkpoint (values widened to float, source_dtype as read)
// as a GGUF save writes them, in the same order; `dtypes` gets the kQwen35MtpDtypesKey entries
// they need. std::invalid_argument naming a tensor with no GGUF name, of a shape that does not
// hold its values, or of an MTP layer `m` does not count (m.qwen35_layers.mtp_layers).
std::vector<GgufRawTensor> qwen35_mtp_to_gguf(const std::vector<NamedTensor>& mtp,
                                              const ModelConfig& m,
                                              std::vector<std::string>& dtypes);

// The MTP tensors of a GGUF file (as stored) as a Hugging Face save writes them, in the same
// order; `dtypes` the file's kQwen35MtpDtypesKey entries (none when the file has no such key).
// std::invalid_argument naming a tensor with no Hugging Face name or of a type remat cannot
// decode.
std::vector<NamedTensor> qwen35_mtp_from_gguf(const std::vector<GgufRawTensor>& gguf,
                                              const ModelConfig& m,
                                              const std::vector<std::string>& dtypes);

}  // namespace remat
