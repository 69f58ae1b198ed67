// What a Qwen3.5 checkpoint holds beyond the values of remat's parameters, kept from loading to
// saving so that what was not trained is written back as it was read:
//   - a safetensors checkpoint (a Hugging Face folder, one file or sharded): the dtype of each
//     parameter (a bf16 checkpoint is saved as bf16; bf16 and f16 values widen to float exactly
//     and round back to the same bits) and the multi-token-prediction layers, mtp.*, which remat
//     does not train (their values, exact for F32, F16 and BF16 alike, and dtypes);
//   - a GGUF model: the tensors of its MTP block (blk.N.* for N past the trunk's layers,
//     blk.N.nextn.* among them) as stored, with the Hugging Face dtypes the file lists for them
//     (formats/qwen35_mtp.h), and each linear layer's ssm_a as stored beside the A_log it was
//     read as. ssm_a = -exp(A_log) does not invert exactly in float32 (formats/gguf_qwen35.h), so
//     an A_log that still holds the values it was loaded with is written back as the ssm_a bytes
//     read; a trained one as -exp(A_log).
// MTP layers cross formats as llama.cpp's converter maps them (formats/qwen35_mtp.h): a
// safetensors checkpoint saved as GGUF writes its mtp.* tensors as the MTP block, a GGUF model
// saved as safetensors its MTP block as mtp.* tensors, each counted in the metadata
// (mtp_num_hidden_layers; qwen35.nextn_predict_layers and block_count). Within a format they are
// written as read.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "formats/gguf_model_writer.h"
#include "formats/safetensors.h"
#include "formats/weight_files.h"
#include "graph/model_config.h"

namespace remat {

struct Qwen35FileExtras {
  std::map<std::string, std::string> dtypes;  // parameter name -> its safetensors dtype
  std::vector<NamedTensor> mtp;               // safetensors mtp.* tensors, in file order
  std::vector<GgufRawTensor> gguf_mtp;        // GGUF MTP block tensors, in file order
  std::vector<std::string> gguf_mtp_dtypes;   // the GGUF file's kQwen35MtpDtypesKey entries
  struct StoredSsmA {
    std::string a_log;          // the parameter, model.layers.N.linear_attn.A_log
    std::vector<float> loaded;  // the values it was loaded with
    GgufRawTensor ssm_a;        // the file's blk.N.ssm_a
  };
  std::vector<StoredSsmA> ssm_a;

  bool has_mtp() const { return !mtp.empty() || !gguf_mtp.empty(); }
};

// The extras of the checkpoint `files` holds for Qwen3.5 model `m`, every value read (a
// non-finite one is std::invalid_argument naming its file, as a load reports it).
Qwen35FileExtras read_qwen35_extras(const WeightFiles& files, const ModelConfig& m);

// The model a save describes: `m` with the MTP layers counted only when `mtp_written`.
ModelConfig qwen35_saved_model(const ModelConfig& m, bool mtp_written);

// The tensors of a safetensors save of `params` (remat's names and shapes, in order): each as
// Hugging Face holds it (a conv1d weight [channels, 1, kernel]) in the dtype it was read in (F32
// without extras), then the MTP tensors `mtp`.
std::vector<TensorSpec> qwen35_safetensors_specs(const std::vector<TensorSpec>& params,
                                                 const Qwen35FileExtras* extras,
                                                 const std::vector<NamedTensor>& mtp);

// Writes a Qwen3.5 model's weights as one safetensors file, atomically: `params` (remat's names
// and shapes, in order) as qwen35_safetensors_specs gives them, each filled by
// `write_param(i, writer)` with its values in order, then the extras' MTP tensors (a GGUF
// model's MTP block as mtp.* tensors, formats/qwen35_mtp.h); the metadata
// (formats/model_metadata.h) of qwen35_saved_model.
void write_qwen35_safetensors(
    const std::filesystem::path& path, const ModelConfig& m, const std::vector<TensorSpec>& params,
    const Qwen35FileExtras* extras,
    const std::function<void(std::size_t index, SafetensorsWriter& writer)>& write_param);

// Whether the extras of model `m` can be written in a save as GGUF (`as_gguf`) or safetensors:
// std::invalid_argument naming an MTP tensor with no name in the other format, checked on names
// and types alone (formats/qwen35_mtp.h), so a command can refuse the save before it trains.
void check_qwen35_extras_writable(const Qwen35FileExtras& extras, const ModelConfig& m,
                                  bool as_gguf);

// Adds to `options` what a GGUF save of model `m` writes as bytes: the MTP block (a safetensors
// checkpoint's mtp.* tensors as the converter maps them, with the kQwen35MtpDtypesKey entries
// they need among the extra keys) and each ssm_a whose A_log `now` (the parameter's values at
// save time) returns bit for bit as loaded.
void add_qwen35_gguf_extras(GgufModelOptions& options, const Qwen35FileExtras& extras,
                            const ModelConfig& m,
                            const std::function<std::vector<float>(const std::string&)>& now);

}  // namespace remat
