// remat_session_* and remat_plan: parameters, planning, training, weights in and out, reports.
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>

#include "api/error_boundary.h"
#include "api/handles.h"
#include "api/reports.h"
#include "api/session_params.h"
#include "base/ignore_target.h"
#include "base/progress.h"
#include "base/regular_file.h"
#include "formats/hf_folder.h"
#include "formats/peft_adapter.h"
#include "formats/safetensors.h"
#include "formats/weight_files.h"
#include "graph/model_builder.h"
#include "planner/delta_chunk.h"
#include "planner/plan.h"
#include "planner/session_plan.h"
#include "runtime/session_budget.h"
#include "runtime/session_files.h"
#include "runtime/training_state.h"
#include "runtime/vulkan/error.h"

using remat::capi::ApiError;
using remat::capi::guarded;
using remat::capi::invalid;
using remat::capi::require;

static_assert(REMAT_IGNORE_TARGET == remat::kIgnoreTarget,
              "remat.h's ignored target must be the one Session::step and the kernels know");

namespace {

remat::Session& session_of(const remat_session* s) {
  require(s != nullptr, "session is NULL");
  return *s->session;
}

// The adapter calls need a LoRA session.
remat::Session& lora_session_of(const remat_session* s) {
  remat::Session& session = session_of(s);
  if (session.plan().adapters.empty())
    invalid("the session trains no LoRA adapters (params->lora_rank is 0)");
  return session;
}

// Every call that submits to a device holds its mutex.
std::unique_lock<std::mutex> lock_device(const remat_session* s) {
  return std::unique_lock<std::mutex>(s->device->mutex);
}

// A folder the app names must exist: IO, not a bad argument, when it does not. A file, device or
// FIFO there is a bad argument.
void require_folder(const char* dir) {
  require(dir != nullptr, "dir is NULL");
  struct stat st {};
  if (::stat(dir, &st) != 0) throw ApiError(REMAT_ERROR_IO, std::string(dir) + ": no such folder");
  if (!S_ISDIR(st.st_mode))
    invalid(std::string(dir) + ": is not a folder (" + remat::file_kind(st.st_mode) + ")");
}

// A file or folder the app names must exist and be readable: IO, not a bad argument, when it is
// not. A device, FIFO or socket is a bad argument, refused before anything opens it.
void require_readable(const char* path) {
  require(path != nullptr, "path is NULL");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return;  // its files are checked as they are read
  try {
    const remat::RegularFile file(path);
  } catch (const remat::NotRegularFile& e) {
    invalid(e.what());
  } catch (const std::invalid_argument& e) {
    throw ApiError(REMAT_ERROR_IO, e.what());
  }
}

// Runs a save: a file or folder that cannot be created, written, synced or renamed is IO; device
// errors and cancellation keep their own statuses.
template <class F>
void writing(F&& save) {
  try {
    save();
  } catch (const remat::VulkanError&) {
    throw;
  } catch (const remat::Cancelled&) {
    throw;
  } catch (const remat::NotRegularFile& e) {  // a device or FIFO, which a rename would replace
    invalid(e.what());
  } catch (const std::runtime_error& e) {  // a write, fsync or rename failed
    throw ApiError(REMAT_ERROR_IO, e.what());
  } catch (const std::invalid_argument& e) {
    throw ApiError(REMAT_ERROR_IO, e.what());
  }
}

template <class T>
std::span<const T> span_of(const T* data, size_t count, const char* name) {
  if (count > 0 && data == nullptr) invalid(std::string(name) + " is NULL");
  return {data, count};
}

}  // namespace

extern "C" {

remat_status remat_session_params_default(remat_session_params* params) {
  return guarded([&] {
    require(params != nullptr, "params is NULL");
    remat::capi::fill_default_params(*params);
  });
}

remat_status remat_session_params_from_file(remat_session_params* params, const char* path) {
  return guarded([&] {
    remat::capi::require_params(params);
    require_readable(path);
    // A folder's config.json, else the GPT-2 shape the file's tensors and metadata imply.
    remat::capi::set_model(*params, remat::checkpoint_model(path, std::nullopt), path);
    remat::capi::set_base_file(*params, path);
  });
}

remat_status remat_session_params_from_memory(remat_session_params* params, const void* data,
                                              size_t size) {
  return guarded([&] {
    remat::capi::require_params(params);
    require(data != nullptr, "data is NULL");
    const std::string bytes(static_cast<const char*>(data), size);
    remat::capi::set_model_from_checkpoint(*params,
                                           remat::parse_safetensors(bytes, "checkpoint in memory"));
    remat::capi::set_base_file(*params, nullptr);
  });
}

remat_status remat_plan(const remat_session_params* params, remat_plan_report* report) {
  return guarded([&] {
    remat::capi::require_plan_report(report);
    const remat::SessionConfig c = remat::capi::session_config(params);
    // Without a device: alignment 256, the smallest binding limit Vulkan allows and `remat
    // plan`'s allocation limits.
    const remat::AllocationLimits allocation = remat::deviceless_allocation_limits();
    const remat::SessionPlanRequest request{c.policy,
                                            c.arena_budget,
                                            c.memory_budget,
                                            c.choose_loss_chunk,
                                            256,
                                            remat::kSmallestBindingLimit,
                                            c.costs,
                                            allocation};
    // Qwen3.5's recurrence chunks as `remat plan` chooses them by default.
    const remat::Plan plan =
        c.choose_delta_chunk
            ? remat::plan_session_choosing_delta_chunk(c.model, c.shape, c.lora, request).plan
            : remat::plan_session(c.model, c.shape, c.lora, request).plan;
    remat::capi::fill_plan_report(plan, c.model, *report);
  });
}

remat_status remat_session_create(remat_device* device, const remat_session_params* params,
                                  remat_session** session) {
  return guarded([&] {
    require(session != nullptr, "session (the output pointer) is NULL");
    *session = nullptr;
    require(device != nullptr, "device is NULL");
    const remat::SessionConfig config = remat::capi::session_config(params);
    auto handle = std::make_unique<remat_session>();
    handle->device = device->state;
    const auto lock = lock_device(handle.get());
    handle->session = std::make_unique<remat::Session>(*device->state->device, config);
    *session = handle.release();
  });
}

void remat_session_free(remat_session* session) {
  remat::capi::clear_error();
  if (!session) return;
  try {
    const auto lock = lock_device(session);
    session->session.reset();
  } catch (...) {
    // Only the lock can throw here; the session's device objects are then leaked, not corrupted.
  }
  delete session;
}

remat_status remat_session_load_file(remat_session* session, const char* path) {
  return guarded([&] {
    remat::Session& s = session_of(session);
    require_readable(path);
    if (!s.config().lora.enabled() && remat::names_gguf_file(path)) {
      const remat::WeightFiles w = remat::WeightFiles::open(path);
      const std::string why =
          remat::full_fine_tune_refusal(*w.gguf(), "set lora_rank > 0 in remat_session_params");
      require(why.empty(), why.c_str());
    }
    const auto lock = lock_device(session);
    s.load(path);
  });
}

remat_status remat_session_load_memory(remat_session* session, const void* data, size_t size) {
  return guarded([&] {
    remat::Session& s = session_of(session);
    require(data != nullptr, "data is NULL");
    const auto lock = lock_device(session);
    s.load(std::span(static_cast<const std::byte*>(data), size), "weights in memory");
  });
}

remat_status remat_session_save_file(remat_session* session, const char* path) {
  return guarded([&] {
    const remat::Session& s = session_of(session);
    require(path != nullptr, "path is NULL");
    const auto lock = lock_device(session);
    writing([&] { remat::save_checkpoint(s, path); });
  });
}

remat_status remat_session_save_adapter(remat_session* session, const char* dir) {
  return guarded([&] {
    const remat::Session& s = lora_session_of(session);
    require(dir != nullptr, "dir is NULL");
    const auto lock = lock_device(session);
    writing([&] { remat::save_adapter(s, dir, ""); });
  });
}

remat_status remat_session_load_adapter(remat_session* session, const char* dir) {
  return guarded([&] {
    remat::Session& s = lora_session_of(session);
    require(dir != nullptr, "dir is NULL");
    if (remat::names_gguf_file(dir)) {
      require_readable(dir);
    } else {
      require_folder(dir);
      require_readable((std::string(dir) + "/adapter_config.json").c_str());
      require_readable((std::string(dir) + "/adapter_model.safetensors").c_str());
    }
    const auto lock = lock_device(session);
    remat::load_adapter(s, dir);
  });
}

remat_status remat_session_save_merged(remat_session* session, const char* path) {
  return guarded([&] {
    const remat::Session& s = lora_session_of(session);
    require(path != nullptr, "path is NULL");
    const auto lock = lock_device(session);
    writing([&] { remat::save_merged(s, path); });
  });
}

remat_status remat_session_step(remat_session* session, const uint32_t* tokens,
                                const uint32_t* targets, size_t count, float* loss) {
  return guarded([&] {
    remat::Session& s = session_of(session);
    require(loss != nullptr, "loss (the output pointer) is NULL");
    const auto in = span_of(tokens, count, "tokens");
    const auto out = span_of(targets, count, "targets");
    const auto lock = lock_device(session);
    *loss = s.step(in, out);
  });
}

remat_status remat_session_step_packed(remat_session* session, const uint32_t* tokens,
                                       const uint32_t* targets, const uint32_t* positions,
                                       size_t count, float* loss) {
  return guarded([&] {
    remat::Session& s = session_of(session);
    require(loss != nullptr, "loss (the output pointer) is NULL");
    if (!s.config().shape.packed)
      invalid("the session was created without params->packed: use remat_session_step");
    const auto in = span_of(tokens, count, "tokens");
    const auto out = span_of(targets, count, "targets");
    const auto pos = span_of(positions, count, "positions");
    const auto lock = lock_device(session);
    *loss = s.step(in, out, pos);
  });
}

remat_status remat_session_set_learning_rate(remat_session* session, double learning_rate) {
  return guarded([&] {
    remat::Session& s = session_of(session);
    if (!std::isfinite(learning_rate) || learning_rate < 0)
      invalid("learning rate " + std::to_string(learning_rate) + " must be finite and at least 0");
    const auto lock = lock_device(session);
    s.set_learning_rate(learning_rate);
  });
}

remat_status remat_session_learning_rate(const remat_session* session, double* learning_rate) {
  return guarded([&] {
    const remat::Session& s = session_of(session);
    require(learning_rate != nullptr, "learning_rate (the output pointer) is NULL");
    *learning_rate = s.learning_rate();
  });
}

remat_status remat_session_steps_done(const remat_session* session, uint64_t* steps) {
  return guarded([&] {
    const remat::Session& s = session_of(session);
    require(steps != nullptr, "steps (the output pointer) is NULL");
    *steps = s.steps_done();
  });
}

remat_status remat_session_save_state(remat_session* session, const char* dir) {
  return guarded([&] {
    const remat::Session& s = session_of(session);
    require(dir != nullptr, "dir is NULL");
    const auto lock = lock_device(session);
    writing([&] { remat::save_training_state(s, dir, {}); });
  });
}

remat_status remat_session_load_state(remat_session* session, const char* dir) {
  return guarded([&] {
    remat::Session& s = session_of(session);
    require_folder(dir);
    const auto lock = lock_device(session);
    remat::load_training_state(s, dir);
  });
}

remat_status remat_session_params_from_state(remat_session_params* params, const char* dir) {
  return guarded([&] {
    remat::capi::require_struct(params, "params");
    require_folder(dir);
    remat::capi::set_from_state(*params, remat::read_training_state(dir));
  });
}

remat_status remat_session_sample(remat_session* session, const uint32_t* prompt,
                                  size_t prompt_count, uint32_t count, uint64_t seed,
                                  float temperature, uint32_t* out, size_t out_capacity) {
  return guarded([&] {
    remat::Session& s = session_of(session);
    const auto in = span_of(prompt, prompt_count, "prompt");
    require(out != nullptr || count == 0, "out is NULL");
    if (out_capacity < count)
      invalid("out holds " + std::to_string(out_capacity) + " tokens, " + std::to_string(count) +
              " were asked for");
    if (count > INT_MAX) invalid("count " + std::to_string(count) + " is too large");
    if (!std::isfinite(temperature) || temperature < 0)
      invalid("temperature must be finite and at least 0");
    if (s.plan().logits == remat::kNoTensor)
      invalid("the session computes the loss in chunks of " +
              std::to_string(s.config().shape.loss_chunk) +
              " rows (params->loss_chunk) and never holds a row's whole logits; sample from a "
              "session created with loss_chunk 0");
    const auto lock = lock_device(session);
    const auto tokens = s.sample(in, static_cast<int>(count), seed, temperature);
    std::copy(tokens.begin(), tokens.end(), out);
  });
}

remat_status remat_session_plan_report(const remat_session* session, remat_plan_report* report) {
  return guarded([&] {
    const remat::Session& s = session_of(session);
    remat::capi::require_plan_report(report);
    remat::capi::fill_plan_report(s.plan(), s.config().model, *report);
  });
}

remat_status remat_session_memory_report(const remat_session* session,
                                         remat_memory_report* report) {
  return guarded([&] {
    const remat::Session& s = session_of(session);
    remat::capi::require_struct(report, "report");
    const auto lock = lock_device(session);
    remat::capi::fill_memory_report(s.memory(), *report);
  });
}

}  // extern "C"
