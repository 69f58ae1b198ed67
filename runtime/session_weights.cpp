// Session: its parameters' values in and out: seeded initialisation, checkpoints loaded and
// saved through staging, the trained parameters an adapter file sets, the optimizer state reset.
#include "runtime/session.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "formats/model_metadata.h"
#include "formats/model_weights.h"
#include "formats/peft_adapter.h"
#include "formats/safetensors.h"
#include "formats/weight_files.h"
#include "graph/weight_dtype.h"
#include "optimizer_params.h"
#include "runtime/float_storage.h"
#include "runtime/kernels/optimizer.h"
#include "runtime/vulkan/staging.h"

namespace remat {

namespace {

// Pieces of a tensor no larger than a staging buffer: floats [first, first + count).
template <class F>
void for_each_piece(uint64_t elements, uint64_t piece_bytes, F&& f) {
  const uint64_t per_piece = piece_bytes / sizeof(float);
  for (uint64_t first = 0; first < elements; first += per_piece)
    f(first, std::min(per_piece, elements - first));
}

// Bytes `values` elements of `t` take as stored (a block tensor's averaged over its blocks), for
// progress reports.
uint64_t stored_bytes(const Tensor& t, uint64_t values) {
  if (t.dtype != DType::blocks) return values * static_cast<uint64_t>(dtype_bytes(t.dtype));
  return values * t.blocks.block_bytes / t.blocks.block_values;
}

// A Staging::Fill of zero bytes: a block weight before its file is loaded (every block type
// decodes zero bytes to zeros).
void zero_fill(std::span<std::byte> piece, uint64_t) {
  std::fill(piece.begin(), piece.end(), std::byte{0});
}

// The [cols, rows] transpose of `v`, a row-major [rows, cols] matrix.
std::vector<float> transposed(const std::vector<float>& v, uint64_t rows, uint64_t cols) {
  std::vector<float> t(v.size());
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) t[std::size_t(c * rows + r)] = v[std::size_t(r * cols + c)];
  return t;
}

}  // namespace

// Files hold GPT-2's Conv1D weights [in, out]; a QLoRA base's blocks hold them [out, in].
bool Session::held_transposed(TensorId id) const {
  return conv1d_held_out_in(config_.shape,
                            plan_.tensors.at(static_cast<std::size_t>(id)).tensor.name);
}

std::vector<int64_t> Session::file_shape(TensorId id) const {
  const Tensor& t = plan_.tensors.at(static_cast<std::size_t>(id)).tensor;
  if (!held_transposed(id)) return t.shape;
  return {t.shape[1], t.shape[0]};
}

uint64_t Session::parameter_bytes() const {
  uint64_t n = 0;
  for (TensorId id : model_weights()) n += plan_.tensors.at(static_cast<std::size_t>(id)).bytes;
  return n;
}

std::vector<TensorSpec> Session::parameter_specs() const {
  std::vector<TensorSpec> specs;
  for (TensorId id : model_weights())
    specs.push_back({plan_.tensors.at(static_cast<std::size_t>(id)).tensor.name, file_shape(id)});
  return specs;
}

void Session::zero_optimizer_state() {
  // The gaps between parameters (trained or frozen): gradients, AdamW moments and the step's
  // inputs and outputs.
  std::vector<std::pair<uint64_t, uint64_t>> params;
  for (const auto* list : {&plan_.parameters, &plan_.frozen})
    for (TensorId id : *list) {
      const PlannedTensor& p = plan_.tensors.at(static_cast<std::size_t>(id));
      params.emplace_back(p.offset, p.offset + p.bytes);
    }
  std::sort(params.begin(), params.end());
  params.emplace_back(plan_.persistent_bytes, plan_.persistent_bytes);
  std::vector<BufferSlice> gaps;
  uint64_t cursor = 0;
  for (const auto& [begin, end] : params) {
    // A gap may span chunks of the persistent buffer: zero it chunk by chunk.
    while (cursor < begin) {
      const auto [chunk, local] = persistent_->locate(cursor);
      const uint64_t n = std::min(begin - cursor, chunk->size() - local);
      gaps.push_back(chunk->slice(local, n));
      cursor += n;
    }
    cursor = std::max(cursor, end);
  }
  fill_zero(device_, gaps);
}

void Session::initialize_parameters(const ProgressFn& progress) {
  const uint64_t total = parameter_bytes();
  Staging staging(device_);
  uint64_t done = 0;
  const auto specs = parameter_specs();
  report_progress(progress, "init", 0, total);
  // The model's weights get the values they have without LoRA (the same seed, the same index).
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const PlannedTensor& p = plan_.tensors.at(static_cast<std::size_t>(model_weights()[i]));
    if (p.tensor.dtype == DType::blocks) {  // a QLoRA base: only ever its file's values
      staging.upload(persistent_->slice(p.offset, p.bytes), zero_fill);
      report_progress(progress, "init", done += p.bytes, total);
      continue;
    }
    staging.upload(persistent_->slice(p.offset, p.bytes),
                   fill_floats(p.tensor.dtype, [&](uint64_t first, std::span<float> out) {
                     initial_values(specs[i], config_.model, config_.seed, i, first, out);
                     report_progress(progress, "init", done += stored_bytes(p.tensor, out.size()),
                                     total);
                   }));
  }
  for (std::size_t i = 0; i < plan_.adapters.size(); ++i) {
    const LoraAdapter& a = plan_.adapters[i];
    for (TensorId id : {a.a, a.b}) {
      const PlannedTensor& p = plan_.tensors.at(static_cast<std::size_t>(id));
      staging.upload(
          persistent_->slice(p.offset, p.bytes),
          fill_floats(p.tensor.dtype, [&](uint64_t first, std::span<float> out) {
            lora_initial_values({p.tensor.name, p.tensor.shape}, config_.seed, i, first, out);
          }));
    }
  }
}

std::vector<float> Session::values(TensorId id) const {
  const PlannedTensor& p = plan_.tensors.at(static_cast<std::size_t>(id));
  if (p.placement != Placement::persistent)
    throw std::logic_error("'" + p.tensor.name + "' is not in the persistent buffer");
  std::vector<float> v(static_cast<std::size_t>(p.tensor.elements()));
  Staging staging(device_);
  download_values(staging, persistent_->slice(p.offset, p.bytes), p.tensor, 0, v);
  if (held_transposed(id))
    return transposed(v, uint64_t(p.tensor.shape[0]), uint64_t(p.tensor.shape[1]));
  return v;
}

void Session::set_trained_parameters(const std::vector<std::vector<float>>& values) {
  if (values.size() != plan_.parameters.size())
    throw std::invalid_argument("expected " + std::to_string(plan_.parameters.size()) +
                                " trained tensors, got " + std::to_string(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const PlannedTensor& p = plan_.tensors.at(static_cast<std::size_t>(plan_.parameters[i]));
    if (values[i].size() != static_cast<std::size_t>(p.tensor.elements()))
      throw std::invalid_argument("'" + p.tensor.name + "' takes " +
                                  std::to_string(p.tensor.elements()) + " values, got " +
                                  std::to_string(values[i].size()));
  }
  Staging staging(device_);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const PlannedTensor& p = plan_.tensors.at(static_cast<std::size_t>(plan_.parameters[i]));
    staging.upload(
        persistent_->slice(p.offset, p.bytes), [&](std::span<std::byte> piece, uint64_t at) {
          std::memcpy(piece.data(), reinterpret_cast<const std::byte*>(values[i].data()) + at,
                      piece.size());
        });
  }
  zero_optimizer_state();
  steps_done_ = 0;
}

std::vector<std::pair<std::string, std::vector<float>>> Session::parameters() const {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  for (TensorId id : plan_.parameters)
    out.emplace_back(plan_.tensors.at(static_cast<std::size_t>(id)).tensor.name, values(id));
  return out;
}

void Session::write_weight(Staging& staging, std::size_t i, SafetensorsWriter& writer,
                           uint64_t& done) const {
  const TensorId id = model_weights()[i];
  const PlannedTensor& p = plan_.tensors.at(static_cast<std::size_t>(id));
  const uint64_t total = parameter_bytes();
  if (held_transposed(id)) {  // transposed on the host, whole
    writer.write(values(id));
    report_progress(config_.progress, "save",
                    done += stored_bytes(p.tensor, uint64_t(p.tensor.elements())), total);
    return;
  }
  const StoredRange whole = stored_range(p.tensor, 0, uint64_t(p.tensor.elements()));
  staging.download(persistent_->slice(p.offset + whole.offset, whole.size),
                   drain_values(p.tensor, whole, [&](uint64_t, std::span<const float> x) {
                     writer.write(x);
                     report_progress(config_.progress, "save",
                                     done += stored_bytes(p.tensor, x.size()), total);
                   }));
}

void Session::save(const std::filesystem::path& path) const {
  Staging staging(device_);
  uint64_t done = 0;
  report_progress(config_.progress, "save", 0, parameter_bytes());
  if (config_.model.qwen35) {
    write_qwen35_safetensors(
        path, config_.model, parameter_specs(), file_extras_.get(),
        [&](std::size_t i, SafetensorsWriter& writer) { write_weight(staging, i, writer, done); });
    return;
  }
  SafetensorsWriter writer(path, parameter_specs(), model_metadata(config_.model));
  for (std::size_t i = 0; i < model_weights().size(); ++i) write_weight(staging, i, writer, done);
  writer.commit();
}

void Session::load(const std::filesystem::path& path) {
  load_from(WeightFiles::open(path));
}

void Session::load(std::span<const std::byte> bytes, std::string_view origin) {
  load_from(WeightFiles::single(SafetensorsSource::view(bytes, std::string(origin))));
}

void Session::upload_blocks(Staging& staging, const WeightFiles& source,
                            const SafetensorsEntry& entry, const PlannedTensor& p,
                            const std::function<void(uint64_t)>& progress) {
  const uint64_t bytes = stored_range(p.tensor, 0, uint64_t(p.tensor.elements())).size;
  if (entry.dtype != p.tensor.blocks.name)
    throw std::invalid_argument(source.origin() + ": '" + entry.name + "' is " + entry.dtype +
                                ", but this session keeps it as " + p.tensor.blocks.name +
                                " blocks");
  // The file's blocks as they are; the padding after them (kBlockTensorPad) is zeros.
  staging.upload(persistent_->slice(p.offset, p.bytes),
                 [&](std::span<std::byte> piece, uint64_t at) {
                   const uint64_t n = at < bytes ? std::min<uint64_t>(piece.size(), bytes - at) : 0;
                   if (n) source.read_blocks(entry, at, piece.first(n));
                   std::fill(piece.begin() + std::ptrdiff_t(n), piece.end(), std::byte{0});
                   progress(n);
                 });
}

void Session::load_from(const WeightFiles& source) {
  std::vector<const SafetensorsEntry*> matched;
  try {
    matched = match_model_parameters(source.header(), parameter_specs(), config_.model);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(source.origin() + ": " + e.what());
  }
  // Read with the checks, before the device is touched: a bad MTP tensor changes nothing.
  std::shared_ptr<const Qwen35FileExtras> extras;
  if (config_.model.qwen35)
    extras = std::make_shared<const Qwen35FileExtras>(read_qwen35_extras(source, config_.model));
  // Progress counts parameter bytes as stored, once checked and once uploaded.
  const uint64_t total = 2 * parameter_bytes();
  uint64_t done = 0;
  report_progress(config_.progress, "load", 0, total);
  // First pass: every value is finite and readable, before the device is touched.
  std::vector<float> scratch(Staging::kDefaultBytes / sizeof(float));
  for (std::size_t i = 0; i < matched.size(); ++i) {
    const Tensor& stored = plan_.tensors.at(static_cast<std::size_t>(model_weights()[i])).tensor;
    for_each_piece(
        matched[i]->elements(), Staging::kDefaultBytes, [&](uint64_t first, uint64_t count) {
          source.read(*matched[i], first, std::span(scratch).first(count));
          report_progress(config_.progress, "load", done += stored_bytes(stored, count), total);
        });
  }
  // Second pass: straight into staging memory, piece by piece.
  try {
    Staging staging(device_);
    for (std::size_t i = 0; i < matched.size(); ++i) {
      const PlannedTensor& p = plan_.tensors.at(static_cast<std::size_t>(model_weights()[i]));
      if (p.tensor.dtype == DType::blocks) {
        upload_blocks(staging, source, *matched[i], p, [&](uint64_t bytes) {
          report_progress(config_.progress, "load", done += bytes, total);
        });
        continue;
      }
      // F32, F16 and BF16 values are read as floats and rounded to the stored dtype: a file
      // in the stored dtype itself round-trips exactly.
      staging.upload(persistent_->slice(p.offset, p.bytes),
                     fill_floats(p.tensor.dtype, [&](uint64_t first, std::span<float> out) {
                       source.read(*matched[i], first, out);
                       report_progress(config_.progress, "load",
                                       done += stored_bytes(p.tensor, out.size()), total);
                     }));
    }
  } catch (...) {
    // Parameters are partly overwritten: fall back to what a fresh session holds.
    initialize_parameters(nullptr);
    zero_optimizer_state();
    steps_done_ = 0;
    throw;
  }
  zero_optimizer_state();
  steps_done_ = 0;
  file_extras_ = extras;
}

}  // namespace remat
