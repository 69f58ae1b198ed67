// A training session: plans the step, allocates exactly what the plan says (one persistent
// buffer, one arena, and a few named fixed extras), records the whole step ONCE (forward,
// recompute, backward, gradient norm, AdamW) and replays it for every batch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/lr_schedule.h"
#include "base/progress.h"
#include "formats/model_weights.h"
#include "formats/qwen35_file_extras.h"
#include "formats/weight_files.h"
#include "graph/cost_model.h"
#include "graph/lora.h"
#include "graph/model_config.h"
#include "graph/optimizer_config.h"
#include "planner/plan.h"
#include "planner/policy.h"
#include "planner/session_extras.h"
#include "runtime/kernels/optimizer.h"
#include "runtime/matmul_tuning.h"
#include "runtime/step_lowering.h"
#include "runtime/vulkan/arena.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/executor.h"
#include "runtime/vulkan/kernel_cache.h"
#include "runtime/vulkan/staging.h"

namespace remat {

struct SessionConfig {
  ModelConfig model;                     // GPT-2 or Llama-family shape
  LoraSpec lora;                         // rank > 0: train LoRA adapters on a frozen model
  TrainShape shape;                      // batch, sequence, dropout
  Policy policy;                         // checkpoint policy (auto needs arena_budget)
  std::optional<uint64_t> arena_budget;  // arena bytes the plan must fit
  // Device bytes the whole session must fit: persistent buffer, arena and the fixed extras
  // (planner/memory_budget.h); the planner plans activations into what the model leaves.
  std::optional<uint64_t> memory_budget;
  // shape.loss_chunk is chosen, not taken as given (config().shape holds the choice): with
  // memory_budget together with the rest of the plan; else whole logits where they fit the
  // device's binding limit (and an auto arena_budget), else the largest chunk that does
  // (planner/loss_chunk.h default_loss_chunk). The C API's and the CLI's default.
  bool choose_loss_chunk = false;
  // Qwen3.5: shape.delta_chunk is chosen as `remat plan --delta-chunk auto` chooses it
  // (planner/delta_chunk.h), not taken as given; config().shape holds the choice.
  bool choose_delta_chunk = false;
  OptimizerConfig optimizer;  // AdamW
  // The learning rate of update s (from 0): decay, warmup, total steps and min ratio as given,
  // peaking at optimizer.lr (schedule.base_lr is not read). The default is constant.
  LrSchedule schedule;
  int accum = 1;                     // micro-batches per optimizer step (gradient accumulation)
  uint64_t seed = 0;                 // weight initialisation and dropout masks
  const CostModel* costs = nullptr;  // measured per-kernel costs, or the FLOP/byte model
  bool timestamps = false;           // per-dispatch GPU timings (Session::dispatch_ms)
  uint64_t max_binding_bytes = 0;    // bind no more than this per storage buffer (0: the
                                     // device's limit); lower only to test binding in pieces
  // Allocate no more than this at once (0: the device's maxMemoryAllocationSize; never raises
  // it): the persistent buffer and the arena are planned in pages of at most this size.
  uint64_t max_allocation_bytes = 0;
  bool fused_optimizer = true;  // the gradient norm and AdamW as one dispatch each per binding
                                // window (false: one per parameter, the same bits; for tests)
  bool fused_bias_grad = true;  // bias gradients summed in the weight gradients' dispatches where
                                // the kernel allows (DeviceQuirks::bias_grad_in_weight_grad;
                                // false: a dispatch of their own, the same bits; for tests)
  // Called during construction ("init": parameter bytes written, "compile": pipelines built),
  // load() ("load": parameter bytes checked, then uploaded, so the total is twice their size)
  // and save() ("save": parameter bytes written); returning false cancels the call (Cancelled).
  ProgressFn progress;
  // Where compiled pipelines are kept between runs (runtime/vulkan/pipeline_cache.h). An empty
  // path, the default, means the default folder: $REMAT_CACHE_DIR, else $XDG_CACHE_HOME/remat, else
  // ~/.cache/remat. Any other path is the app's own folder. std::nullopt disables the file.
  std::optional<std::filesystem::path> pipeline_cache_dir = std::filesystem::path();
  // Choose the texel matmuls' register tiles by timing them on this device at their first use,
  // remembered next to the pipeline cache (runtime/matmul_tuning.h); false keeps the tiles from
  // device facts, as REMAT_MATMUL_TUNING=off does for every session. Never changes results.
  bool measure_matmul_tiles = true;
};

// Planned bytes next to the bytes the device ledger measured.
struct MemoryReport {
  uint64_t persistent_bytes = 0;                         // plan: parameters, grads, moments, io
  uint64_t arena_bytes = 0;                              // plan: the activation arena
  std::vector<std::pair<std::string, uint64_t>> extras;  // named fixed extras (staging, ...)
  uint64_t planned_total_bytes = 0;                      // sum of the above
  uint64_t device_bytes_allocated = 0;                   // measured: live device allocations
  uint64_t device_peak_bytes = 0;                        // measured: high-water mark
};

// Offsets in both buffers are multiples of this: the device's binding alignment, at least 16.
uint64_t session_alignment(const Device& device);

class Session {
 public:
  // Plans (std::invalid_argument for bad shapes, a budget below the minimum, or a plan the
  // device cannot hold or bind), allocates, initialises the family's weights from config.seed
  // (formats/model_weights.h; streamed tensor by tensor; gradients and moments zeroed on the
  // device) and records the step. Cancelled (from config.progress) frees everything allocated so
  // far.
  Session(Device& device, const SessionConfig& config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Loads the model's weights (under LoRA the frozen base) from a safetensors file, a shard index
  // (model.safetensors.index.json) or a Hugging Face model folder holding either
  // (formats/weight_files.h), with exactly the model's Hugging Face names (GPT-2:
  // formats/gpt2_weights.h; Llama: formats/llama_weights.h), F32, F16 or BF16, shapes matching, and
  // resets the optimizer state. std::invalid_argument for a bad or mismatched file. The file is
  // read in bounded pieces, twice: every value is checked before the first one is uploaded, so a
  // bad file leaves the session as it was. Cancelled during the checks leaves it as it was too;
  // cancelled (or a read error) during the upload, the session holds the seeded initial weights of
  // a fresh session. Either way it stays usable.
  void load(const std::filesystem::path& path);
  // The same from a safetensors image in memory the caller owns (not copied; it must stay alive
  // during the call). `origin` names it in error messages.
  void load(std::span<const std::byte> bytes, std::string_view origin);
  // Writes the model's weights (under LoRA the frozen base; formats/peft_adapter.h saves the
  // adapters) as F32 with the graph's Hugging Face names, atomically, streamed through
  // a bounded staging buffer. A Qwen3.5 model is written as Hugging Face holds it
  // (formats/qwen35_file_extras.h: conv1d [C, 1, K], each tensor in the dtype it was loaded in,
  // the loaded MTP layers after the parameters, a GGUF file's MTP block as mtp.* tensors).
  // Cancelled or failed, no file is left and any previous one is kept.
  void save(const std::filesystem::path& path) const;
  // What the last load() read of a Qwen3.5 checkpoint beyond the parameters (each parameter's
  // dtype, its MTP layers, a GGUF file's ssm_a bytes: formats/qwen35_file_extras.h), which save()
  // and runtime/session_files write back; nullptr before a load and for other families.
  const Qwen35FileExtras* file_extras() const { return file_extras_.get(); }

  // One optimizer step on accum micro-batches of [B,T] tokens and targets (each < vocab; a
  // target may be kIgnoreTarget, base/ignore_target.h: that position is not trained),
  // micro-batch m in rows [m·B, (m+1)·B). The loss is the mean cross-entropy over the trained
  // targets of all micro-batches together, each target weighing the same however the micro-
  // batches split them; it is returned, and its gradient is what AdamW steps on. A step with no
  // trained target is refused (std::invalid_argument) before anything runs.
  // A session of packed rows (TrainShape::packed) takes each token's position in its example as
  // well, as many as tokens (base/row_positions.h); other sessions take none.
  float step(std::span<const uint32_t> tokens, std::span<const uint32_t> targets,
             std::span<const uint32_t> positions = {});
  // The mean loss over the trained targets of [B,T] tokens and targets (as step takes them)
  // without training: the plan's forward pass with dropout off, recorded on the first call. It
  // uses no device memory of its own and changes nothing training reads: weights, AdamW moments
  // and later steps' results are bit-identical with and without evaluations in between.
  float evaluate(std::span<const uint32_t> tokens, std::span<const uint32_t> targets,
                 std::span<const uint32_t> positions = {});
  // Objectives over whole rows (runtime/session_rows.cpp), in a session whose shape has
  // row_loss_scales. A row's log-prob is the sum of log p(target) over its trained targets: minus
  // the sum of its losses, summed in double in position order (0 for a row that trains nothing).
  // d(objective)/d(row's log-prob) for micro-batch `micro`'s B rows, given their log-probs.
  using RowCoefficients =
      std::function<std::vector<double>(std::size_t micro, std::span<const double> log_probs)>;
  // One optimizer step on accum micro-batches as step() takes them (no positions): each runs its
  // forward pass, `coefficients` turns its rows' log-probs into their coefficients c, and the
  // backward gives each row r the cross-entropy gradient scaled by -c[r] (its log-prob's
  // gradient is minus its losses'), micro-batches adding up; then AdamW. Tokens and targets are
  // checked as step() checks them, but a row may train nothing.
  void step_rows(std::span<const uint32_t> tokens, std::span<const uint32_t> targets,
                 const RowCoefficients& coefficients);
  // The log-prob of each of B rows without training: the forward pass with dropout off, as
  // evaluate() runs it. Rows that train nothing give 0.
  std::vector<double> row_log_probs(std::span<const uint32_t> tokens,
                                    std::span<const uint32_t> targets);
  // The schedule's peak (the rate itself under the default constant schedule).
  void set_learning_rate(double lr) { config_.optimizer.lr = lr; }
  // The rate the next step() uses: the schedule at steps_done().
  double learning_rate() const;
  uint32_t steps_done() const { return steps_done_; }
  // The global gradient norm of the last step (before clipping).
  float last_grad_norm() const;

  const Plan& plan() const { return plan_; }
  const SessionConfig& config() const { return config_; }
  MemoryReport memory() const;
  // Milliseconds per dispatch of the last step, with the plan step each executes (timestamps must
  // be on).
  struct DispatchTime {
    int step = -1;       // index into plan().steps
    std::string label;   // the dispatch's label, for display
    std::string kernel;  // the shader it ran (kernel_name), to group timings by kernel
    double ms = 0;
  };
  std::vector<DispatchTime> dispatch_ms() const;
  std::size_t dispatch_count() const;
  // Pipeline barriers the recorded command buffers put between dependent dispatches.
  std::size_t barrier_count() const;
  // How the texel matmuls' tiles were chosen (classes measured now or read from the tile file),
  // and the tiling the step was recorded with.
  const MatmulTuningReport& matmul_tuning() const { return matmul_tuning_; }
  const MatmulTiling& matmul_tiling() const { return quirks_.matmul_tiling; }

  // Generates `count` tokens after `prompt` (at least one token, each < vocab) by running the
  // plan's forward pass on row 0 and sampling the last position's softmax at `temperature`
  // (0: the most likely token), among the `top_k` most likely (0: all; ties with the k-th are
  // kept). Deterministic for a seed. Dropout, if configured, stays on.
  std::vector<uint32_t> sample(std::span<const uint32_t> prompt, int count, uint64_t seed,
                               float temperature = 1.0f, int top_k = 0);

  // Host copies of the trained parameters (HF or PEFT-module names, plan order: the LoRA adapters
  // when there are any), for saving and tests.
  std::vector<std::pair<std::string, std::vector<float>>> parameters() const;
  // A host copy of any persistent tensor of the plan (a frozen weight, say), in the order files
  // hold it: a GPT-2 Conv1D weight the device holds [out, in] (conv1d_held_out_in) comes back
  // transposed, [in, out] as in Hugging Face files (file_shape).
  std::vector<float> values(TensorId id) const;
  // Whether the device holds persistent tensor `id` as the transpose of what files hold: a GPT-2
  // Conv1D weight kept [out, in] in a QLoRA base's blocks (conv1d_held_out_in).
  bool held_transposed(TensorId id) const;
  // The shape files give a persistent tensor: its plan shape, transposed if held_transposed.
  std::vector<int64_t> file_shape(TensorId id) const;
  // Replaces every trained parameter (plan order, exact sizes, else std::invalid_argument, nothing
  // written) and resets the optimizer state, as load() does for the model's weights.
  void set_trained_parameters(const std::vector<std::vector<float>>& values);

  // For runtime/training_state: the device bytes of a persistent plan tensor (a parameter or an
  // AdamW moment), the step count a restored state continues from, and the way back to what a
  // fresh session holds (seeded weights, zero moments, step 0) when a restore fails half-way.
  Device& device() const { return device_; }
  BufferSlice persistent_slice(TensorId id) const;
  void restore_steps_done(uint32_t steps) { steps_done_ = steps; }
  void reset_training();

 private:
  void check_fits_device() const;
  void check_fits_budget() const;           // the driver's allocation sizes against memory_budget
  void check_device_features() const;       // 16-bit tensors need storageBuffer16BitAccess
  BufferSlice slice_of(TensorId id) const;  // where a plan tensor's bytes are
  LoweringExtras lowering_extras() const;   // the session's buffers the kernels also need
  const std::vector<TensorId>& model_weights() const;  // the model's (under LoRA: frozen) weights
  std::vector<TensorSpec> parameter_specs() const;     // of model_weights()
  uint64_t parameter_bytes() const;                    // of model_weights(), as stored
  void zero_optimizer_state();  // everything in the persistent buffer but the parameters
  void initialize_parameters(const ProgressFn& progress);
  void load_from(const WeightFiles& source);
  // Writes model weight `i` (of model_weights()) into `writer`, read back through `staging`;
  // `done` counts save progress in stored bytes.
  void write_weight(Staging& staging, std::size_t i, SafetensorsWriter& writer,
                    uint64_t& done) const;
  // A block tensor's bytes straight from its file (a QLoRA base; `progress` gets bytes read).
  void upload_blocks(Staging& staging, const WeightFiles& source, const SafetensorsEntry& entry,
                     const PlannedTensor& p, const std::function<void(uint64_t)>& progress);
  void choose_matmul_tiles();
  void record();
  void upload_optimizer_table();              // the pieces the fused optimizer dispatches read
  std::vector<CopyRegion> io_inputs() const;  // tokens, targets (positions): io staging -> plan
  // Refuses positions that do not fit the session (packed or not; base/row_positions.h).
  void check_positions(std::span<const uint32_t> positions, std::size_t tokens) const;
  // Writes micro-batch `m`'s positions of n tokens into the io staging (packed sessions only).
  void stage_positions(std::span<const uint32_t> positions, std::size_t m, std::size_t n);
  push::AdamWHyper step_hyper() const;  // this step's AdamW block (loss_scale left 1)
  // The row-scale step's parts (Plan::row_loss_scales): forward, backward, optimizer.
  void record_rows(const ExecutorOptions& io, const ExecutorOptions& norm_out);
  std::vector<double> read_row_log_probs() const;  // of the B rows the last forward ran
  void ensure_evaluator();
  std::vector<const Executor*> executors() const;  // the step's, in the order they run

  Device& device_;
  SessionConfig config_;
  DeviceQuirks quirks_;  // the device's, with config_.max_binding_bytes applied
  Plan plan_;
  SessionExtras extras_;  // the fixed buffers beside the plan's two (planner/session_extras.h)
  std::unique_ptr<KernelCache> kernels_;
  std::unique_ptr<Arena> persistent_;
  std::unique_ptr<Arena> arena_;
  std::unique_ptr<Buffer> io_;            // host-visible: tokens, targets in; losses, grad norm out
  std::unique_ptr<Buffer> hyper_;         // host-visible: push::AdamWHyper (with the loss scale),
                                          // rewritten every step
  std::unique_ptr<Buffer> partials_;      // grad-norm partial sums
  std::unique_ptr<Buffer> table_;         // push::OptimizerPiece entries, written once
  std::unique_ptr<Executor> executor_;    // the whole step (accum 1) or the first micro-batch
  std::unique_ptr<Executor> accumulate_;  // later micro-batches: parameter gradients +=
  std::unique_ptr<Executor> optimizer_;   // grad norm + AdamW, after the last micro-batch
  std::unique_ptr<Executor> evaluator_;   // forward and loss only, dropout off (evaluate)
  // Row-scale sessions: executor_ runs the forward pass only, these the rest (the first
  // micro-batch's, later ones' adding to the parameter gradients); optimizer_ runs AdamW.
  std::unique_ptr<Executor> backward_;
  std::unique_ptr<Executor> backward_accumulate_;
  uint32_t steps_done_ = 0;
  MatmulTuningReport matmul_tuning_;
  std::shared_ptr<const Qwen35FileExtras> file_extras_;
};

}  // namespace remat
