// remat for C++20 apps: header-only RAII wrappers over the C API (remat/remat.h). The handles
// stay opaque, so apps depend on the C ABI alone; errors come back as remat::api::Error, thrown
// here in the app's own code from the status and message of the failed C call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "remat/remat.h"

namespace remat::api {

class Error : public std::runtime_error {
 public:
  Error(remat_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  remat_status status() const noexcept { return status_; }

 private:
  remat_status status_;
};

// Throws Error with the thread's last-error message unless `status` is REMAT_OK.
inline void check(remat_status status) {
  if (status != REMAT_OK) throw Error(status, remat_last_error());
}

struct DeviceInfo {
  uint32_t index = 0;
  remat_device_type type = REMAT_DEVICE_TYPE_OTHER;
  uint64_t memory_bytes = 0;
  std::string name;
};

// Every Vulkan device remat can see, in enumeration order.
inline std::vector<DeviceInfo> devices() {
  uint32_t count = 0;
  check(remat_device_count(&count));
  std::vector<DeviceInfo> out;
  for (uint32_t i = 0; i < count; ++i) {
    remat_device_info info{};
    info.struct_size = sizeof info;
    check(remat_device_get_info(i, &info));
    out.push_back({info.index, info.type, info.memory_bytes, info.name});
  }
  return out;
}

// remat_session_params with its defaults filled in.
struct SessionParams : remat_session_params {
  SessionParams() : remat_session_params{} { check(remat_session_params_default(this)); }
  // Defaults, with the model shape and family of a checkpoint: a safetensors file or Hugging Face
  // folder, a GGUF file (whose base stays in its blocks under LoRA by default), or a training state.
  static SessionParams from_file(const std::string& path) {
    SessionParams p;
    check(remat_session_params_from_file(&p, path.c_str()));
    return p;
  }
  static SessionParams from_memory(std::span<const std::byte> checkpoint) {
    SessionParams p;
    check(remat_session_params_from_memory(&p, checkpoint.data(), checkpoint.size()));
    return p;
  }
  // Defaults, with what a training state determines (model, shape, AdamW, schedule, arena).
  static SessionParams from_state(const std::string& dir) {
    SessionParams p;
    check(remat_session_params_from_state(&p, dir.c_str()));
    return p;
  }
};

// Plans without a device.
inline remat_plan_report plan(const remat_session_params& params) {
  remat_plan_report report{};
  report.struct_size = sizeof report;
  check(remat_plan(&params, &report));
  return report;
}

class Device {
 public:
  // Index or name substring; empty: REMAT_DEVICE, else the default order.
  static Device open(const std::string& selector = {}) {
    remat_device* d = nullptr;
    check(remat_device_open(selector.empty() ? nullptr : selector.c_str(), &d));
    return Device(d);
  }
  // The app's own Vulkan objects (see remat_vulkan_handles).
  static Device wrap(const remat_vulkan_handles& handles) {
    remat_device* d = nullptr;
    check(remat_device_wrap(&handles, &d));
    return Device(d);
  }
  remat_device* handle() const noexcept { return handle_.get(); }

 private:
  struct Free {
    void operator()(remat_device* d) const noexcept { remat_device_free(d); }
  };
  explicit Device(remat_device* d) : handle_(d) {}
  std::unique_ptr<remat_device, Free> handle_;
};

class Session {
 public:
  // phase, done, total; return false to cancel the running call (it then throws Error with
  // REMAT_ERROR_CANCELLED). An exception it throws also cancels.
  using Progress = std::function<bool(std::string_view phase, uint64_t done, uint64_t total)>;

  // `progress`, when given, replaces params.progress for the session's lifetime.
  Session(const Device& device, const remat_session_params& params, Progress progress = {})
      : progress_(progress ? std::make_unique<Progress>(std::move(progress)) : nullptr) {
    remat_session_params p = params;
    if (progress_) {
      p.progress = &Session::report_progress;
      p.progress_user = progress_.get();
    }
    remat_session* s = nullptr;
    check(remat_session_create(device.handle(), &p, &s));
    handle_.reset(s);
  }

  void load(const std::string& path) { check(remat_session_load_file(handle(), path.c_str())); }
  void load(std::span<const std::byte> checkpoint) {
    check(remat_session_load_memory(handle(), checkpoint.data(), checkpoint.size()));
  }
  void save(const std::string& path) { check(remat_session_save_file(handle(), path.c_str())); }
  // LoRA sessions (params.lora_rank > 0): PEFT's adapter files, and merged full weights.
  void save_adapter(const std::string& dir) {
    check(remat_session_save_adapter(handle(), dir.c_str()));
  }
  void load_adapter(const std::string& dir) {
    check(remat_session_load_adapter(handle(), dir.c_str()));
  }
  void save_merged(const std::string& path) {
    check(remat_session_save_merged(handle(), path.c_str()));
  }

  // One optimizer step; tokens and targets hold accum x batch x seq values each, a target
  // REMAT_IGNORE_TARGET where that position is not trained. Returns the mean over trained ones.
  float step(std::span<const uint32_t> tokens, std::span<const uint32_t> targets) {
    if (tokens.size() != targets.size())
      throw Error(REMAT_ERROR_INVALID_ARGUMENT, "tokens and targets differ in length (" +
                                                    std::to_string(tokens.size()) + " and " +
                                                    std::to_string(targets.size()) + ")");
    float loss = 0;
    check(remat_session_step(handle(), tokens.data(), targets.data(), tokens.size(), &loss));
    return loss;
  }
  // A session of packed rows (params.packed): each token's position in its example as well.
  float step(std::span<const uint32_t> tokens, std::span<const uint32_t> targets,
             std::span<const uint32_t> positions) {
    if (tokens.size() != targets.size() || tokens.size() != positions.size())
      throw Error(REMAT_ERROR_INVALID_ARGUMENT, "tokens, targets and positions differ in length (" +
                                                    std::to_string(tokens.size()) + ", " +
                                                    std::to_string(targets.size()) + " and " +
                                                    std::to_string(positions.size()) + ")");
    float loss = 0;
    check(remat_session_step_packed(handle(), tokens.data(), targets.data(), positions.data(),
                                    tokens.size(), &loss));
    return loss;
  }
  void set_learning_rate(double lr) { check(remat_session_set_learning_rate(handle(), lr)); }
  // The rate the next step uses (the schedule at steps_done()).
  double learning_rate() const {
    double lr = 0;
    check(remat_session_learning_rate(handle(), &lr));
    return lr;
  }
  uint64_t steps_done() const {
    uint64_t n = 0;
    check(remat_session_steps_done(handle(), &n));
    return n;
  }

  // Training states (docs/training-state.md): everything needed to continue bit-identically.
  void save_state(const std::string& dir) {
    check(remat_session_save_state(handle(), dir.c_str()));
  }
  void load_state(const std::string& dir) {
    check(remat_session_load_state(handle(), dir.c_str()));
  }

  std::vector<uint32_t> sample(std::span<const uint32_t> prompt, uint32_t count, uint64_t seed,
                               float temperature = 1.0f) {
    std::vector<uint32_t> out(count);
    check(remat_session_sample(handle(), prompt.data(), prompt.size(), count, seed, temperature,
                               out.data(), out.size()));
    return out;
  }

  remat_plan_report plan_report() const {
    remat_plan_report r{};
    r.struct_size = sizeof r;
    check(remat_session_plan_report(handle(), &r));
    return r;
  }
  remat_memory_report memory_report() const {
    remat_memory_report r{};
    r.struct_size = sizeof r;
    check(remat_session_memory_report(handle(), &r));
    return r;
  }

  remat_session* handle() const noexcept { return handle_.get(); }

 private:
  struct Free {
    void operator()(remat_session* s) const noexcept { remat_session_free(s); }
  };
  static int report_progress(void* user, const char* phase, uint64_t done, uint64_t total) {
    try {
      return (*static_cast<Progress*>(user))(phase, done, total) ? 0 : 1;
    } catch (...) {
      return 1;  // nothing may unwind through the C library
    }
  }
  std::unique_ptr<Progress> progress_;  // heap: its address stays put when the Session moves
  std::unique_ptr<remat_session, Free> handle_;
};

// A byte-level BPE tokenizer (remat_tokenizer): text bytes to token ids and back.
class Tokenizer {
 public:
  // tokenizer.json, a folder of tokenizer.json, vocab.json + merges.txt or encoder.json +
  // vocab.bpe, or a GGUF model file.
  static Tokenizer load(const std::string& path) {
    remat_tokenizer* t = nullptr;
    check(remat_tokenizer_load(path.c_str(), &t));
    return Tokenizer(t);
  }

  uint32_t vocab_size() const {
    uint32_t n = 0;
    check(remat_tokenizer_vocab_size(handle(), &n));
    return n;
  }

  // With `special` false, special-token text is encoded as ordinary text.
  std::vector<uint32_t> encode(std::string_view text, bool special = true) {
    size_t count = 0;
    check(remat_tokenizer_encode(handle(), text.data(), text.size(), special, nullptr, 0, &count));
    std::vector<uint32_t> ids(count);
    check(remat_tokenizer_encode(handle(), text.data(), text.size(), special, ids.data(),
                                 ids.size(), &count));
    return ids;
  }

  // The exact bytes the ids encode (not necessarily valid UTF-8 when a character is cut).
  std::string decode(std::span<const uint32_t> ids) const {
    size_t bytes = 0;
    check(remat_tokenizer_decode(handle(), ids.data(), ids.size(), nullptr, 0, &bytes));
    std::string out(bytes, '\0');
    check(remat_tokenizer_decode(handle(), ids.data(), ids.size(), out.data(), out.size(), &bytes));
    return out;
  }

  remat_tokenizer* handle() const noexcept { return handle_.get(); }

 private:
  struct Free {
    void operator()(remat_tokenizer* t) const noexcept { remat_tokenizer_free(t); }
  };
  explicit Tokenizer(remat_tokenizer* t) : handle_(t) {}
  std::unique_ptr<remat_tokenizer, Free> handle_;
};

// Rows to train on (remat_examples): fine-tuning examples of a JSONL file, one example per row
// (only the tokens it trains on have targets), or windows of a token stream (load_text).
class Examples {
 public:
  // An empty `chat_template` takes the template from the tokenizer's tokenizer_config.json (or
  // a GGUF file's tokenizer.chat_template).
  static Examples load(const std::string& jsonl, const std::string& tokenizer, int32_t seq,
                       const std::string& chat_template = {}) {
    remat_examples* e = nullptr;
    check(remat_examples_load(jsonl.c_str(), tokenizer.c_str(),
                              chat_template.empty() ? nullptr : chat_template.c_str(), seq, &e));
    return Examples(e, seq);
  }
  // Several examples to a row (remat_examples_options.pack), for a session with params.packed.
  static Examples load_packed(const std::string& jsonl, const std::string& tokenizer, int32_t seq,
                              const std::string& chat_template = {}) {
    remat_examples_options o{};
    o.struct_size = sizeof o;
    o.seq = seq;
    o.chat_template_path = chat_template.empty() ? nullptr : chat_template.c_str();
    o.pack = 1;
    remat_examples* e = nullptr;
    check(remat_examples_load_with(jsonl.c_str(), tokenizer.c_str(), &o, &e));
    return Examples(e, seq);
  }
  // Windows of a token stream (remat_examples_load_text): a text encoded with `tokenizer`
  // (empty: its bytes) or an llm.c token file, every id below `vocab`.
  static Examples load_text(const std::string& path, int32_t seq, uint32_t vocab,
                            const std::string& tokenizer = {},
                            remat_data_format format = REMAT_DATA_AUTO) {
    remat_text_options o{};
    o.struct_size = sizeof o;
    o.seq = seq;
    o.format = format;
    o.tokenizer_path = tokenizer.empty() ? nullptr : tokenizer.c_str();
    o.vocab = vocab;
    remat_examples* e = nullptr;
    check(remat_examples_load_text(path.c_str(), &o, &e));
    return Examples(e, seq);
  }

  // What the rows hold: their kind, tokens or examples, and the unigram entropy.
  remat_rows_report report() const {
    remat_rows_report r{};
    r.struct_size = sizeof r;
    check(remat_examples_report(handle(), &r));
    return r;
  }
  // Kept examples (examples only).
  uint64_t size() const { return counts().first; }
  uint64_t trained_targets() const { return counts().second; }

  // Rows index*batch .. index*batch + batch - 1, [batch, seq] each.
  void batch(uint64_t index, int32_t batch, std::vector<uint32_t>& tokens,
             std::vector<uint32_t>& targets) const {
    const std::size_t n = static_cast<std::size_t>(batch > 0 ? batch : 0) * seq_;
    tokens.resize(n);
    targets.resize(n);
    check(remat_examples_batch(handle(), index, batch, tokens.data(), targets.data()));
  }
  // The same with each token's position in its example (packed rows restart at 0 per example).
  void batch(uint64_t index, int32_t batch, std::vector<uint32_t>& tokens,
             std::vector<uint32_t>& targets, std::vector<uint32_t>& positions) const {
    const std::size_t n = static_cast<std::size_t>(batch > 0 ? batch : 0) * seq_;
    tokens.resize(n);
    targets.resize(n);
    positions.resize(n);
    check(remat_examples_batch_packed(handle(), index, batch, tokens.data(), targets.data(),
                                      positions.data()));
  }
  // Rows, fill and padding of one pass, one example a row and packed.
  remat_packing_report packing() const {
    remat_packing_report r{};
    r.struct_size = sizeof r;
    check(remat_examples_packing(handle(), &r));
    return r;
  }

  int32_t seq() const noexcept { return seq_; }
  remat_examples* handle() const noexcept { return handle_.get(); }

 private:
  std::pair<uint64_t, uint64_t> counts() const {
    uint64_t kept = 0, trained = 0;
    check(remat_examples_count(handle(), &kept, &trained));
    return {kept, trained};
  }
  struct Free {
    void operator()(remat_examples* e) const noexcept { remat_examples_free(e); }
  };
  Examples(remat_examples* e, int32_t seq) : handle_(e), seq_(seq) {}
  std::unique_ptr<remat_examples, Free> handle_;
  int32_t seq_;
};

}  // namespace remat::api
