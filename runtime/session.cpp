#include "runtime/session.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "base/half_float.h"
#include "base/ignore_target.h"
#include "formats/gpt2_weights.h"
#include "formats/model_weights.h"
#include "formats/peft_adapter.h"
#include "formats/safetensors.h"
#include "formats/weight_files.h"
#include "optimizer_params.h"
#include "runtime/float_storage.h"
#include "runtime/kernels/optimizer.h"
#include "runtime/matmul_tile_file.h"
#include "runtime/pipeline_cache.h"
#include "runtime/session_budget.h"
#include "runtime/staging.h"
#include "runtime/step_lowering.h"

namespace remat {

namespace {

// Pieces of a tensor no larger than a staging buffer: floats [first, first + count).
template <class F>
void for_each_piece(uint64_t elements, uint64_t piece_bytes, F&& f) {
  const uint64_t per_piece = piece_bytes / sizeof(float);
  for (uint64_t first = 0; first < elements; first += per_piece)
    f(first, std::min(per_piece, elements - first));
}

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
  return q;
}

// Checks every token and target against the vocabulary (a target may also be kIgnoreTarget: not
// trained) and returns how many targets are trained. `what` names the call for the refusal of a
// batch that trains nothing, whose mean loss would be 0/0.
std::size_t trained_targets(std::span<const uint32_t> tokens, std::span<const uint32_t> targets,
                            int vocabulary, const char* what) {
  const auto vocab = static_cast<uint32_t>(vocabulary);
  std::size_t trained = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const bool ignored = targets[i] == kIgnoreTarget;
    if (tokens[i] >= vocab || (targets[i] >= vocab && !ignored))
      throw std::invalid_argument(
          "token " + std::to_string(tokens[i] >= vocab ? tokens[i] : targets[i]) + " at position " +
          std::to_string(i) + " is outside the vocabulary of " + std::to_string(vocab));
    trained += ignored ? 0 : 1;
  }
  if (trained == 0)
    throw std::invalid_argument(std::string(what) + " needs at least one trained target, but all " +
                                std::to_string(targets.size()) +
                                " are the ignored target 0xFFFFFFFF");
  return trained;
}

LrSchedule scheduled(const SessionConfig& c) {
  LrSchedule s = c.schedule;
  s.base_lr = c.optimizer.lr;
  return s;
}

// Logits [begin, begin + V) of mapped staging holding `dt` values, as floats (16-bit ones widened
// into `widened`).
const float* logits_row(const void* mapped, DType dt, std::size_t begin, std::size_t V,
                        std::vector<float>& widened) {
  if (dt == DType::f32) return static_cast<const float*>(mapped) + begin;
  const uint16_t* h = static_cast<const uint16_t*>(mapped) + begin;
  widened.resize(V);
  for (std::size_t v = 0; v < V; ++v)
    widened[v] = dt == DType::f16 ? f16_to_float(h[v]) : bf16_to_float(h[v]);
  return widened.data();
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
  if (const std::string why = config_.model.training_refusal(); !why.empty())
    throw std::invalid_argument(why);
  check_fits_device();
  if (config_.memory_budget)
    check_allocation_sizes(device_, plan_, extras_, *config_.memory_budget);
  check_device_features();
  validate(scheduled(config_));
  kernels_ = std::make_unique<KernelCache>(device_, cache_file(device_, config_));
  choose_matmul_tiles();  // before the model's buffers: the probes' memory is gone by then
  persistent_ = std::make_unique<Arena>(device_, plan_.persistent_bytes, 0,
                                        MemoryCategory::persistent, "persistent buffer");
  arena_ = std::make_unique<Arena>(device_, plan_.arena_bytes);

  io_ = std::make_unique<Buffer>(device_, extras_.io_staging, MemoryCategory::staging,
                                 "step io staging", true);
  hyper_ = std::make_unique<Buffer>(device_, extras_.adamw_hyper, MemoryCategory::scratch,
                                    "AdamW hyperparameters", true);
  partials_ = std::make_unique<Buffer>(device_, extras_.grad_norm_partials, MemoryCategory::scratch,
                                       "grad-norm partials");
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
    if (const auto big = oversized_binding(plan_, quirks_)) {
      const bool activation = !is_persistent_role(big->role) || big->role == Role::input;
      throw std::invalid_argument(
          "tensor '" + big->tensor + "' (" + mib(big->bytes) + ") is bound whole by '" + big->op +
          "', but " + device_.info().name + " binds at most " + mib(quirks_.max_binding_bytes) +
          " per storage buffer (maxStorageBufferRange); " +
          (activation ? "use a smaller --batch or --seq" : "use a smaller model"));
    }
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
  extras.grad_norm_partials = partials_->whole();
  extras.grad_clip = config_.optimizer.grad_clip;
  extras.dropout_seed = config_.seed;
  return extras;
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
  return {{io_->handle(), tokens.buffer, 0, tokens.offset, tokens.size},
          {io_->handle(), targets.buffer, tokens.size, targets.offset, targets.size}};
}

const std::vector<TensorId>& Session::model_weights() const {
  return plan_.adapters.empty() ? plan_.parameters : plan_.frozen;
}

uint64_t Session::parameter_bytes() const {
  uint64_t n = 0;
  for (TensorId id : model_weights()) n += plan_.tensors.at(static_cast<std::size_t>(id)).bytes;
  return n;
}

std::vector<TensorSpec> Session::parameter_specs() const {
  std::vector<TensorSpec> specs;
  for (TensorId id : model_weights()) {
    const Tensor& t = plan_.tensors.at(static_cast<std::size_t>(id)).tensor;
    specs.push_back({t.name, t.shape});
  }
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
    const uint64_t size = static_cast<uint64_t>(dtype_bytes(p.tensor.dtype));
    staging.upload(persistent_->slice(p.offset, p.bytes),
                   fill_floats(p.tensor.dtype, [&](uint64_t first, std::span<float> out) {
                     initial_values(specs[i], config_.model, config_.seed, i, first, out);
                     report_progress(progress, "init", done += out.size() * size, total);
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
  Staging(device_).download(
      persistent_->slice(p.offset, p.bytes),
      drain_floats(p.tensor.dtype, [&](uint64_t first, std::span<const float> x) {
        std::copy(x.begin(), x.end(), v.begin() + std::ptrdiff_t(first));
      }));
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

float Session::step(std::span<const uint32_t> tokens, std::span<const uint32_t> targets) {
  const std::size_t n = static_cast<std::size_t>(config_.shape.batch) * config_.shape.seq;
  const std::size_t micro = static_cast<std::size_t>(std::max(config_.accum, 1));
  if (tokens.size() != n * micro || targets.size() != n * micro)
    throw std::invalid_argument(
        "a step takes " + std::to_string(n * micro) + " tokens and targets (accum " +
        std::to_string(micro) + " × batch " + std::to_string(config_.shape.batch) + " × seq " +
        std::to_string(config_.shape.seq) + "), got " + std::to_string(tokens.size()) + " and " +
        std::to_string(targets.size()));
  // Counted over all micro-batches before the first runs: the loss is their joint mean.
  const std::size_t trained = trained_targets(tokens, targets, config_.model.vocab, "a step");
  kernels::AdamWConfig adam;
  adam.lr = learning_rate();
  adam.beta1 = config_.optimizer.beta1;
  adam.beta2 = config_.optimizer.beta2;
  adam.eps = config_.optimizer.eps;
  adam.weight_decay = config_.optimizer.weight_decay;
  push::AdamWHyper hyper = kernels::adamw_hyper(adam, steps_done_ + 1);
  hyper.loss_scale = 1.0f / static_cast<float>(trained);

  auto* io = static_cast<uint8_t*>(io_->mapped());
  const auto* losses = reinterpret_cast<const float*>(io + extras_.io_losses_offset);
  double sum = 0;  // in position order, in double: the same sum every run
  for (std::size_t m = 0; m < micro; ++m) {
    // Dropout keys its masks by hyper.step (AdamW reads only the bias corrections): every
    // micro-batch gets its own masks, and accum 1 keys step s by s + 1.
    hyper.step = static_cast<uint32_t>(steps_done_ * micro + m + 1);
    std::memcpy(hyper_->mapped(), &hyper, sizeof hyper);
    std::memcpy(io, tokens.data() + m * n, n * 4);
    std::memcpy(io + n * 4, targets.data() + m * n, n * 4);
    (m == 0 ? executor_ : accumulate_)->run();
    for (std::size_t i = 0; i < n; ++i) sum += losses[i];
  }
  if (optimizer_) optimizer_->run();
  ++steps_done_;
  return static_cast<float>(sum / double(trained));  // ignored positions' losses are 0
}

double Session::learning_rate() const {
  return remat::learning_rate(scheduled(config_), steps_done_);
}

BufferSlice Session::persistent_slice(TensorId id) const {
  if (plan_.tensors.at(static_cast<std::size_t>(id)).placement != Placement::persistent)
    throw std::logic_error("tensor " + std::to_string(int(id)) + " is not persistent");
  return slice_of(id);
}

void Session::reset_training() {
  initialize_parameters(nullptr);
  zero_optimizer_state();
  steps_done_ = 0;
}

float Session::evaluate(std::span<const uint32_t> tokens, std::span<const uint32_t> targets) {
  const std::size_t n = static_cast<std::size_t>(config_.shape.batch) * config_.shape.seq;
  if (tokens.size() != n || targets.size() != n)
    throw std::invalid_argument(
        "evaluating takes " + std::to_string(n) + " tokens and targets (batch " +
        std::to_string(config_.shape.batch) + " × seq " + std::to_string(config_.shape.seq) +
        "), got " + std::to_string(tokens.size()) + " and " + std::to_string(targets.size()));
  const std::size_t trained = trained_targets(tokens, targets, config_.model.vocab, "evaluating");
  if (!evaluator_) {
    // The loss of the model itself, not of a thinned one: dropout scales by 1 and keeps all.
    Plan forward = plan_;
    for (Step& s : forward.steps) s.attrs.dropout_p = 0;
    const TensorSlices slices = [this](TensorId id) { return slice_of(id); };
    ExecutorOptions io;
    io.before = io_inputs();
    const BufferSlice losses = slice_of(plan_.losses);
    io.after = {
        {losses.buffer, io_->handle(), losses.offset, extras_.io_losses_offset, losses.size}};
    evaluator_ = std::make_unique<Executor>(*kernels_,
                                            lower_plan(forward, quirks_, slices, lowering_extras(),
                                                       {LoweringPart::Phases::forward, false}),
                                            io);
  }
  // The forward pass writes only what a step writes before reading it: the io staging, the
  // activations in the arena and the losses. The previous step's gradient norm stays readable.
  auto* io = static_cast<uint8_t*>(io_->mapped());
  std::memcpy(io, tokens.data(), n * 4);
  std::memcpy(io + n * 4, targets.data(), n * 4);
  evaluator_->run();
  const auto* losses = reinterpret_cast<const float*>(io + extras_.io_losses_offset);
  double sum = 0;  // in position order, in double, as step() sums
  for (std::size_t i = 0; i < n; ++i) sum += losses[i];
  return static_cast<float>(sum / double(trained));
}

float Session::last_grad_norm() const {
  push::GradNormResult r;
  std::memcpy(&r, static_cast<const uint8_t*>(io_->mapped()) + extras_.io_norm_offset, sizeof r);
  return r.norm;
}

std::vector<std::pair<std::string, std::vector<float>>> Session::parameters() const {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  for (TensorId id : plan_.parameters)
    out.emplace_back(plan_.tensors.at(static_cast<std::size_t>(id)).tensor.name, values(id));
  return out;
}

void Session::save(const std::filesystem::path& path) const {
  SafetensorsWriter writer(path, parameter_specs(), gpt2_metadata(config_.model));
  Staging staging(device_);
  const uint64_t total = parameter_bytes();
  uint64_t done = 0;
  report_progress(config_.progress, "save", 0, total);
  for (TensorId id : model_weights()) {
    const PlannedTensor& p = plan_.tensors.at(static_cast<std::size_t>(id));
    const uint64_t size = static_cast<uint64_t>(dtype_bytes(p.tensor.dtype));
    staging.download(persistent_->slice(p.offset, p.bytes),
                     drain_floats(p.tensor.dtype, [&](uint64_t, std::span<const float> x) {
                       writer.write(x);
                       report_progress(config_.progress, "save", done += x.size() * size, total);
                     }));
  }
  writer.commit();
}

void Session::load(const std::filesystem::path& path) {
  load_from(WeightFiles::open(path));
}

void Session::load(std::span<const std::byte> bytes, std::string_view origin) {
  load_from(WeightFiles::single(SafetensorsSource::view(bytes, std::string(origin))));
}

void Session::load_from(const WeightFiles& source) {
  std::vector<const SafetensorsEntry*> matched;
  try {
    matched = match_model_parameters(source.header(), parameter_specs(), config_.model);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(source.origin() + ": " + e.what());
  }
  // Progress counts parameter bytes as stored, once checked and once uploaded.
  const uint64_t total = 2 * parameter_bytes();
  uint64_t done = 0;
  report_progress(config_.progress, "load", 0, total);
  // First pass: every value is finite and readable, before the device is touched.
  std::vector<float> scratch(Staging::kDefaultBytes / sizeof(float));
  for (std::size_t i = 0; i < matched.size(); ++i) {
    const Tensor& stored = plan_.tensors.at(static_cast<std::size_t>(model_weights()[i])).tensor;
    const uint64_t size = static_cast<uint64_t>(dtype_bytes(stored.dtype));
    for_each_piece(matched[i]->elements(), Staging::kDefaultBytes,
                   [&](uint64_t first, uint64_t count) {
                     source.read(*matched[i], first, std::span(scratch).first(count));
                     report_progress(config_.progress, "load", done += count * size, total);
                   });
  }
  // Second pass: straight into staging memory, piece by piece.
  try {
    Staging staging(device_);
    for (std::size_t i = 0; i < matched.size(); ++i) {
      const PlannedTensor& p = plan_.tensors.at(static_cast<std::size_t>(model_weights()[i]));
      const uint64_t size = static_cast<uint64_t>(dtype_bytes(p.tensor.dtype));
      // F32, F16 and BF16 values are read as floats and rounded to the stored dtype: a file
      // in the stored dtype itself round-trips exactly.
      staging.upload(persistent_->slice(p.offset, p.bytes),
                     fill_floats(p.tensor.dtype, [&](uint64_t first, std::span<float> out) {
                       source.read(*matched[i], first, out);
                       report_progress(config_.progress, "load", done += out.size() * size, total);
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
}

MemoryReport Session::memory() const {
  MemoryReport r;
  r.persistent_bytes = plan_.persistent_bytes;
  r.arena_bytes = plan_.arena_bytes;
  r.extras = extras_.named();
  uint64_t rounding = persistent_->allocated_bytes() - persistent_->size() +
                      arena_->allocated_bytes() - arena_->size() + io_->allocated_bytes() -
                      io_->size() + hyper_->allocated_bytes() - hyper_->size() +
                      partials_->allocated_bytes() - partials_->size();
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
  for (const Executor* e : {executor_.get(), accumulate_.get(), optimizer_.get()}) {
    if (!e) continue;
    const auto ms = e->dispatch_ms();
    for (std::size_t i = 0; i < ms.size(); ++i)
      out.push_back({e->dispatches()[i].step, e->dispatches()[i].label, ms[i]});
  }
  return out;
}

std::vector<uint32_t> Session::sample(std::span<const uint32_t> prompt, int count, uint64_t seed,
                                      float temperature, int top_k) {
  const auto T = static_cast<std::size_t>(config_.shape.seq);
  const auto V = static_cast<std::size_t>(config_.model.vocab);
  const std::size_t n = static_cast<std::size_t>(config_.shape.batch) * T;
  if (prompt.empty()) throw std::invalid_argument("sampling needs a prompt of at least one token");
  for (uint32_t t : prompt)
    if (t >= V)
      throw std::invalid_argument("prompt token " + std::to_string(t) +
                                  " is outside the vocabulary");
  // A chunked head (TrainShape::loss_chunk) never holds a row's whole logits.
  if (plan_.logits == kNoTensor)
    throw std::invalid_argument("sampling needs the whole logits: use loss chunk 0");
  const PlannedTensor& lt = plan_.tensors.at(static_cast<std::size_t>(plan_.logits));

  // Row 0's logits, [T, V], copied out after the forward pass; freed when sampling ends.
  const DType ldt = lt.tensor.dtype;
  const std::size_t lbytes = T * V * static_cast<std::size_t>(dtype_bytes(ldt));
  Buffer out(device_, lbytes, MemoryCategory::staging, "sample staging", true);
  const TensorSlices slices = [this](TensorId id) { return slice_of(id); };
  const LoweringExtras extras = lowering_extras();
  ExecutorOptions opts;
  const BufferSlice ls = arena_->slice(lt.offset, lt.bytes);
  opts.before = io_inputs();
  opts.after = {{ls.buffer, out.handle(), ls.offset, 0, lbytes}};
  Executor forward(
      *kernels_, lower_plan(plan_, quirks_, slices, extras, {LoweringPart::Phases::forward, false}),
      opts);

  std::vector<uint32_t> context(prompt.begin(), prompt.end()), generated;
  std::vector<float> widened;  // a 16-bit logits row as floats
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto uniform = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return double((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
  };
  auto* io = static_cast<uint32_t*>(io_->mapped());
  for (int g = 0; g < count; ++g) {
    // The model sees the last T tokens; causal attention makes the padding after them irrelevant.
    const std::size_t len = std::min(context.size(), T);
    std::fill(io, io + 2 * n, 0u);
    std::copy(context.end() - static_cast<std::ptrdiff_t>(len), context.end(), io);
    forward.run();
    const float* row = logits_row(out.mapped(), ldt, (len - 1) * V, V, widened);
    std::size_t pick = 0;
    if (temperature <= 0) {
      pick = static_cast<std::size_t>(std::max_element(row, row + V) - row);
    } else {
      const float top = *std::max_element(row, row + V);
      float floor = -INFINITY;  // logits below the k-th largest are never picked
      if (top_k > 0 && std::size_t(top_k) < V) {
        std::vector<float> sorted(row, row + V);
        std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(),
                         std::greater<>());
        floor = sorted[std::size_t(top_k - 1)];
      }
      std::vector<double> p(V);
      double total = 0;
      for (std::size_t v = 0; v < V; ++v)
        total += p[v] = row[v] < floor ? 0.0 : std::exp(double(row[v] - top) / temperature);
      double r = uniform() * total;
      // Zero-probability tokens (outside the top k) are stepped over even when r is 0.
      for (pick = 0; pick + 1 < V && ((r -= p[pick]) > 0 || p[pick] == 0); ++pick) {
      }
    }
    context.push_back(static_cast<uint32_t>(pick));
    generated.push_back(static_cast<uint32_t>(pick));
  }
  return generated;
}

std::size_t Session::dispatch_count() const {
  std::size_t n = 0;
  for (const Executor* e : {executor_.get(), accumulate_.get(), optimizer_.get()})
    if (e) n += e->dispatch_count();
  return n;
}

std::size_t Session::barrier_count() const {
  std::size_t n = 0;
  for (const Executor* e : {executor_.get(), accumulate_.get(), optimizer_.get()})
    if (e) n += e->barrier_count();
  return n;
}

}  // namespace remat
