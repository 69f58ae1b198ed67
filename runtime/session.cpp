#include "runtime/session.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "optimizer_params.h"
#include "planner/loss_chunk.h"
#include "runtime/kernels/optimizer.h"
#include "runtime/matmul_tile_file.h"
#include "runtime/session_budget.h"
#include "runtime/step_lowering.h"
#include "runtime/vulkan/pipeline_cache.h"
#include "runtime/vulkan/staging.h"

namespace remat {

namespace {

std::optional<std::filesystem::path> cache_file(const Device& device, const SessionConfig& c) {
  if (!c.pipeline_cache_dir) return std::nullopt;
  std::optional<std::filesystem::path> dir = *c.pipeline_cache_dir;
  if (dir->empty()) dir = default_pipeline_cache_dir();
  if (!dir) return std::nullopt;
  return pipeline_cache_file(*dir, pipeline_cache_key(device));
}

DeviceQuirks session_quirks(const Device& d, const SessionConfig& c) {
  DeviceQuirks q = d.plan().quirks;
  const uint64_t limit = c.max_binding_bytes;
  if (limit != 0 && (q.max_binding_bytes == 0 || limit < q.max_binding_bytes))
    q.max_binding_bytes = limit;
  q.bias_grad_in_weight_grad = q.bias_grad_in_weight_grad && c.fused_bias_grad;
  return q;
}

LrSchedule scheduled(const SessionConfig& c) {
  LrSchedule s = c.schedule;
  s.base_lr = c.optimizer.lr;
  return s;
}

// What to change so that `big` binds: the loss chunk for the head's logits (whole, or one
// chunk's workspace and its gradient) while a chunk of kLossChunkAlign rows would bind; else,
// for an activation of B·T rows, fewer rows (naming how many bind); else the model.
std::string binding_fix(const OversizedBinding& big, const Plan& plan, const SessionConfig& c,
                        uint64_t max_binding_bytes) {
  const int chunk = largest_binding_chunk(c.model, max_binding_bytes);
  if (big.tensor.rfind("head.", 0) == 0 && big.tensor.find("logits") != std::string::npos &&
      chunk > 0)
    return "use --loss-chunk auto, or a chunk of at most " + std::to_string(chunk) +
           " rows (C API: params->loss_chunk -1 or " + std::to_string(chunk) + ")";
  if (is_persistent_role(big.role) && big.role != Role::input) return "use a smaller model";
  std::string rows;
  const int64_t bt = int64_t(c.shape.batch) * c.shape.seq;
  for (const PlannedTensor& t : plan.tensors)
    if (t.tensor.name == big.tensor && t.tensor.shape.size() == 2 && t.tensor.shape[0] == bt)
      rows = " (B·T is " + std::to_string(bt) + " rows; at most " +
             std::to_string(max_binding_bytes / (t.tensor.bytes() / uint64_t(bt))) +
             " bind; --accum keeps the tokens per step)";
  return "use a smaller --batch or --seq" + rows;
}

}  // namespace

uint64_t session_alignment(const Device& d) {
  // The device's binding alignment; 16 keeps vec4-sized accesses aligned too.
  return std::max<uint64_t>(d.info().min_storage_buffer_offset_alignment, 16);
}

Session::Session(Device& device, const SessionConfig& config)
    : device_(device),
      config_(config),
      quirks_(session_quirks(device, config)),
      plan_(session_plan(device, config_, quirks_)),
      extras_(session_extras(plan_, quirks_.max_binding_bytes)) {
  check_fits_device();
  if (config_.memory_budget)
    check_allocation_sizes(device_, plan_, extras_, *config_.memory_budget);
  check_device_features();
  validate(scheduled(config_));
  kernels_ = std::make_unique<KernelCache>(device_, cache_file(device_, config_));
  choose_matmul_tiles();  // before the model's buffers: the probes' memory is gone by then
  persistent_ = std::make_unique<Arena>(device_, plan_.persistent_allocations,
                                        MemoryCategory::persistent, "persistent buffer");
  arena_ = std::make_unique<Arena>(device_, plan_.arena_allocations);

  io_ = std::make_unique<Buffer>(device_, extras_.io_staging, MemoryCategory::staging,
                                 "step io staging", true);
  hyper_ = std::make_unique<Buffer>(device_, extras_.adamw_hyper, MemoryCategory::scratch,
                                    "AdamW hyperparameters", true);
  partials_ = std::make_unique<Buffer>(device_, extras_.grad_norm_partials, MemoryCategory::scratch,
                                       "grad-norm partials");
  table_ = std::make_unique<Buffer>(device_, extras_.optimizer_table, MemoryCategory::scratch,
                                    "optimizer table");
  upload_optimizer_table();
  zero_optimizer_state();
  initialize_parameters(config_.progress);
  record();
  kernels_->save_pipeline_cache();
}

Session::~Session() = default;

void Session::check_fits_device() const {
  // Refuse before allocating: a plan larger than the device's memory would fail (or thrash) in
  // vkAllocateMemory with a message that cannot say what to change.
  auto mib = [](uint64_t b) { return std::to_string((b + (1u << 20) - 1) >> 20) + " MiB"; };
  const uint64_t device_bytes = device_.info().device_local_bytes();
  const uint64_t need = plan_.persistent_bytes + plan_.arena_bytes;
  if (device_bytes == 0 || need <= device_bytes) {
    // Likewise a tensor bound whole above maxStorageBufferRange would fail only when recorded.
    if (const auto big = oversized_binding(plan_, quirks_))
      throw std::invalid_argument(
          "tensor '" + big->tensor + "' (" + mib(big->bytes) + ") is bound whole by '" + big->op +
          "', but " + device_.info().name + " binds at most " + mib(quirks_.max_binding_bytes) +
          " per storage buffer (maxStorageBufferRange); " +
          binding_fix(*big, plan_, config_, quirks_.max_binding_bytes));
    return;
  }
  std::string fix;
  if (plan_.persistent_bytes < device_bytes)
    fix = "; cap activation memory with --arena (at most " +
          mib(device_bytes - plan_.persistent_bytes) +
          " is left after the model), or use a smaller --batch or --seq";
  else
    fix = "; the model's parameters, gradients and AdamW moments alone need " +
          mib(plan_.persistent_bytes) + ": use a smaller model";
  throw std::invalid_argument("the plan needs " + mib(need) + " (persistent " +
                              mib(plan_.persistent_bytes) + " + arena " + mib(plan_.arena_bytes) +
                              ") but " + device_.info().name + " has " + mib(device_bytes) +
                              " of device memory" + fix);
}

void Session::check_device_features() const {
  // A 16-bit tensor (a frozen base under --weights-dtype, activations under --act-dtype) is read
  // by kernels that declare StorageBuffer16BitAccess; without the feature enabled they would be
  // invalid SPIR-V here.
  if (device_.plan().enable_storage_buffer_16bit) return;
  for (const PlannedTensor& p : plan_.tensors)
    if (p.tensor.dtype == DType::f16 || p.tensor.dtype == DType::bf16)
      throw std::invalid_argument(
          device_.info().name + " was not opened with storageBuffer16BitAccess, which '" +
          p.tensor.name + "' stored as " + std::string(dtype_name(p.tensor.dtype)) + " needs; " +
          (p.tensor.persistent ? "store the weights as f32 (--weights-dtype f32)"
                               : "store the activations as f32 (--act-dtype f32)"));
}

BufferSlice Session::slice_of(TensorId id) const {
  const PlannedTensor& t = plan_.tensors.at(static_cast<std::size_t>(id));
  switch (t.placement) {
    case Placement::persistent:
      return persistent_->slice(t.offset, t.bytes);
    case Placement::arena:
      return arena_->slice(t.offset, t.bytes);
    case Placement::unused:
      break;
  }
  throw std::logic_error("the schedule uses tensor '" + t.tensor.name +
                         "', which has no placement");
}

LoweringExtras Session::lowering_extras() const {
  LoweringExtras extras;
  extras.adamw_hyper = hyper_->whole();
  extras.row_scales_word = static_cast<uint32_t>(extras_.row_scales_offset / 4);
  extras.grad_norm_partials = partials_->whole();
  if (config_.fused_optimizer) extras.optimizer_table = table_->whole();
  extras.grad_clip = config_.optimizer.grad_clip;
  extras.dropout_seed = config_.seed;
  return extras;
}

void Session::upload_optimizer_table() {
  const TensorSlices slices = [this](TensorId id) { return slice_of(id); };
  const auto t = optimizer_table(plan_, quirks_, slices, partials_->whole());
  if (t.pieces.size() * sizeof(push::OptimizerPiece) != extras_.optimizer_table)
    throw std::logic_error("the optimizer table has " + std::to_string(t.pieces.size()) +
                           " pieces, not the planned " +
                           std::to_string(extras_.optimizer_table / sizeof(push::OptimizerPiece)));
  if (!t.pieces.empty()) upload(device_, *table_, std::span<const push::OptimizerPiece>(t.pieces));
}

void Session::choose_matmul_tiles() {
  if (!config_.measure_matmul_tiles || !matmul_tuning_enabled_by_env()) return;
  // The tile file lives next to the pipeline cache file, or nowhere when that one does.
  std::optional<std::filesystem::path> file;
  if (const auto& pipelines = kernels_->pipeline_cache().file())
    file = matmul_tile_file(pipelines->parent_path(), matmul_tile_file_key(device_));
  matmul_tuning_ = tune_matmul_tiles(*kernels_, lower_plan_stand_ins(plan_, quirks_), file,
                                     quirks_.matmul_tiling);
}

void Session::record() {
  const TensorSlices slices = [this](TensorId id) { return slice_of(id); };
  const LoweringExtras extras = lowering_extras();
  const DeviceQuirks& quirks = quirks_;

  ExecutorOptions io;
  io.timestamps = config_.timestamps;
  const BufferSlice losses = slice_of(plan_.losses);
  io.before = io_inputs();
  io.after = {{losses.buffer, io_->handle(), losses.offset, extras_.io_losses_offset, losses.size}};
  ExecutorOptions norm_out;
  norm_out.timestamps = config_.timestamps;
  for (const Step& s : plan_.steps)
    if (s.kind == OpKind::grad_norm) {
      const BufferSlice n = slice_of(s.outputs.at(0));
      norm_out.after.push_back({n.buffer, io_->handle(), n.offset, extras_.io_norm_offset,
                                sizeof(push::GradNormResult)});
    }

  // The dispatches of each executor; their pipelines are built first, with progress.
  std::vector<std::vector<Dispatch>> parts;
  using Phases = LoweringPart::Phases;
  if (plan_.row_loss_scales) return record_rows(io, norm_out);
  if (config_.accum <= 1) {
    parts.push_back(lower_plan(plan_, quirks, slices, extras));
    io.after.insert(io.after.end(), norm_out.after.begin(), norm_out.after.end());
  } else {
    parts.push_back(lower_plan(plan_, quirks, slices, extras, {Phases::forward_backward, false}));
    parts.push_back(lower_plan(plan_, quirks, slices, extras, {Phases::forward_backward, true}));
    parts.push_back(lower_plan(plan_, quirks, slices, extras, {Phases::optimizer, false}));
  }
  std::vector<KernelKey> keys;
  for (const auto& part : parts)
    for (const Dispatch& d : part) keys.emplace_back(d.kernel, d.spec);
  kernels_->build(keys, config_.progress);
  executor_ = std::make_unique<Executor>(*kernels_, std::move(parts[0]), io);
  if (parts.size() == 1) return;
  accumulate_ = std::make_unique<Executor>(*kernels_, std::move(parts[1]), io);
  optimizer_ = std::make_unique<Executor>(*kernels_, std::move(parts[2]), norm_out);
}

std::vector<CopyRegion> Session::io_inputs() const {
  const BufferSlice tokens = slice_of(plan_.tokens), targets = slice_of(plan_.targets);
  std::vector<CopyRegion> copies = {
      {io_->handle(), tokens.buffer, 0, tokens.offset, tokens.size},
      {io_->handle(), targets.buffer, tokens.size, targets.offset, targets.size}};
  if (plan_.positions != kNoTensor) {
    const BufferSlice positions = slice_of(plan_.positions);
    copies.push_back({io_->handle(), positions.buffer, extras_.io_positions_offset,
                      positions.offset, positions.size});
  }
  return copies;
}

const std::vector<TensorId>& Session::model_weights() const {
  return plan_.adapters.empty() ? plan_.parameters : plan_.frozen;
}

double Session::learning_rate() const {
  return remat::learning_rate(scheduled(config_), steps_done_);
}

BufferSlice Session::persistent_slice(TensorId id) const {
  if (plan_.tensors.at(static_cast<std::size_t>(id)).placement != Placement::persistent)
    throw std::logic_error("tensor " + std::to_string(int(id)) + " is not persistent");
  return slice_of(id);
}

MemoryReport Session::memory() const {
  MemoryReport r;
  r.persistent_bytes = plan_.persistent_bytes;
  r.arena_bytes = plan_.arena_bytes;
  r.extras = extras_.named();
  uint64_t rounding = persistent_->allocated_bytes() - persistent_->size() +
                      arena_->allocated_bytes() - arena_->size() + io_->allocated_bytes() -
                      io_->size() + hyper_->allocated_bytes() - hyper_->size() +
                      partials_->allocated_bytes() - partials_->size() + table_->allocated_bytes() -
                      table_->size();
  if (rounding) r.extras.push_back({"driver allocation rounding", rounding});
  r.planned_total_bytes = r.persistent_bytes + r.arena_bytes;
  for (const auto& [name, bytes] : r.extras) r.planned_total_bytes += bytes;
  const MemoryStats s = const_cast<Device&>(device_).ledger().stats();
  r.device_bytes_allocated = s.total_live_bytes;
  r.device_peak_bytes = s.peak_total_bytes;
  return r;
}

std::vector<Session::DispatchTime> Session::dispatch_ms() const {
  std::vector<DispatchTime> out;
  for (const Executor* e : executors()) {
    const auto ms = e->dispatch_ms();
    for (std::size_t i = 0; i < ms.size(); ++i)
      out.push_back({e->dispatches()[i].step, e->dispatches()[i].label,
                     std::string(kernel_name(e->dispatches()[i].kernel)), ms[i]});
  }
  return out;
}

std::size_t Session::dispatch_count() const {
  std::size_t n = 0;
  for (const Executor* e : executors()) n += e->dispatch_count();
  return n;
}

std::size_t Session::barrier_count() const {
  std::size_t n = 0;
  for (const Executor* e : executors()) n += e->barrier_count();
  return n;
}

}  // namespace remat
