#include "runtime/training_state.h"

#include <stdexcept>
#include <vector>

#include "base/atomic_file.h"
#include "base/atomic_folder.h"
#include "base/regular_file.h"
#include "base/whole_file.h"
#include "formats/safetensors.h"
#include "formats/training_state_json.h"
#include "runtime/vulkan/staging.h"

namespace remat {
namespace {

namespace fs = std::filesystem;

const char* const kStateJson = "state.json";
const char* const kParams = "params.safetensors";
const char* const kOptimizer = "optimizer.safetensors";

// A tensor of a state file and where its bytes live in the session.
struct StateTensor {
  TensorSpec spec;
  TensorId id = kNoTensor;
};

std::vector<StateTensor> parameter_tensors(const Session& s) {
  std::vector<StateTensor> out;
  const Plan& plan = s.plan();
  for (TensorId id : plan.parameters) {
    const Tensor& t = plan.tensors.at(static_cast<std::size_t>(id)).tensor;
    out.push_back({{t.name, t.shape}, id});
  }
  return out;
}

// AdamW's moments in PyTorch's state-dict names, each parameter's m then v.
std::vector<StateTensor> moment_tensors(const Session& s) {
  std::vector<StateTensor> out;
  const Plan& plan = s.plan();
  for (std::size_t i = 0; i < plan.parameters.size(); ++i) {
    const Tensor& p = plan.tensors.at(static_cast<std::size_t>(plan.parameters[i])).tensor;
    out.push_back({{p.name + ".exp_avg", p.shape}, plan.adam_m.at(i)});
    out.push_back({{p.name + ".exp_avg_sq", p.shape}, plan.adam_v.at(i)});
  }
  return out;
}

uint64_t tensor_bytes(const Session& s, const std::vector<StateTensor>& tensors) {
  uint64_t n = 0;
  for (const StateTensor& t : tensors) n += s.plan().tensors.at(std::size_t(t.id)).bytes;
  return n;
}

// Streams the tensors from the device into one safetensors file; returns its data section's hash.
uint64_t write_tensors(const Session& s, const fs::path& path,
                       const std::vector<StateTensor>& tensors, Staging& staging,
                       const std::function<void(uint64_t)>& advanced) {
  std::vector<TensorSpec> specs;
  for (const StateTensor& t : tensors) specs.push_back(t.spec);
  SafetensorsWriter writer(path, specs, {{"format", "pt"}});
  Fnv1a64 hash;
  for (const StateTensor& t : tensors)
    staging.download(s.persistent_slice(t.id), [&](std::span<const std::byte> piece, uint64_t) {
      writer.write({reinterpret_cast<const float*>(piece.data()), piece.size() / sizeof(float)});
      hash.update(piece);
      advanced(piece.size());
    });
  writer.commit();
  return hash.digest();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// The entries of `source` for `tensors`, in that order: the same names and shapes, F32, and
// nothing else in the file.
std::vector<const SafetensorsEntry*> match(const SafetensorsSource& source,
                                           const std::vector<StateTensor>& tensors) {
  const SafetensorsHeader& h = source.header();
  std::vector<const SafetensorsEntry*> out;
  for (const StateTensor& t : tensors) {
    const SafetensorsEntry* e = h.find(t.spec.name);
    if (!e)
      throw std::invalid_argument(source.origin() + ": has no tensor '" + t.spec.name +
                                  "', which this session trains");
    if (e->shape != t.spec.shape)
      throw std::invalid_argument(source.origin() + ": tensor '" + t.spec.name + "' is " +
                                  shape_text(e->shape) + ", this session's is " +
                                  shape_text(t.spec.shape));
    out.push_back(e);
  }
  for (const SafetensorsEntry& e : h.tensors) {
    if (e.dtype != "F32")
      throw std::invalid_argument(source.origin() + ": tensor '" + e.name + "' is " + e.dtype +
                                  "; a training state holds F32 only");
  }
  if (h.tensors.size() != tensors.size())
    throw std::invalid_argument(source.origin() + ": holds " + std::to_string(h.tensors.size()) +
                                " tensors, this session has " + std::to_string(tensors.size()));
  return out;
}

// Reads every value of the file (finite, readable) and checks its data section's hash.
void verify(const SafetensorsSource& source, uint64_t expected,
            const std::function<void(uint64_t)>& advanced) {
  Fnv1a64 hash;
  std::vector<float> scratch(Staging::kDefaultBytes / sizeof(float));
  for (const SafetensorsEntry& e : source.header().tensors) {
    const uint64_t n = e.elements();
    for (uint64_t first = 0; first < n; first += scratch.size()) {
      const std::span<float> piece = std::span(scratch).first(
          static_cast<std::size_t>(std::min<uint64_t>(scratch.size(), n - first)));
      source.read(e, first, piece);
      hash.update(std::as_bytes(piece));
      advanced(piece.size_bytes());
    }
  }
  if (hash.digest() != expected)
    throw std::invalid_argument(source.origin() + ": contents differ from the hash in " +
                                std::string(kStateJson) + " (damaged or replaced)");
}

void upload(Session& s, const SafetensorsSource& source,
            const std::vector<const SafetensorsEntry*>& entries,
            const std::vector<StateTensor>& tensors, Staging& staging,
            const std::function<void(uint64_t)>& advanced) {
  for (std::size_t i = 0; i < tensors.size(); ++i)
    staging.upload(s.persistent_slice(tensors[i].id), [&](std::span<std::byte> piece, uint64_t at) {
      source.read(*entries[i], at / sizeof(float),
                  {reinterpret_cast<float*>(piece.data()), piece.size() / sizeof(float)});
      advanced(piece.size());
    });
}

std::string model_text(const ModelConfig& m) {
  std::string s = std::string(architecture_name(m.arch)) + " L" + std::to_string(m.layers) + " C" +
                  std::to_string(m.dim) + " H" + std::to_string(m.heads) + " V" +
                  std::to_string(m.vocab) + " ctx" + std::to_string(m.ctx);
  if (m.arch == Architecture::llama)
    s += " KV" + std::to_string(m.kv_head_count()) + " ffn" + std::to_string(m.mlp_width());
  return s;
}

// The first setting in which the state's run and the session differ, as "<what> <state> ...".
void require_same_run(const TrainingState& st, const SessionConfig& c, const fs::path& dir) {
  auto differ = [&](const std::string& what, const std::string& state, const std::string& ours) {
    throw std::invalid_argument(dir.string() + ": the state's run has " + what + " " + state +
                                ", this session " + ours);
  };
  if (!(st.model == c.model)) differ("model", model_text(st.model), model_text(c.model));
  if (st.shape.batch != c.shape.batch)
    differ("batch", std::to_string(st.shape.batch), std::to_string(c.shape.batch));
  if (st.shape.seq != c.shape.seq)
    differ("seq", std::to_string(st.shape.seq), std::to_string(c.shape.seq));
  if (st.shape.dropout != c.shape.dropout)
    differ("dropout", std::to_string(st.shape.dropout), std::to_string(c.shape.dropout));
  if (st.shape.loss_chunk != c.shape.loss_chunk)
    differ("loss_chunk", std::to_string(st.shape.loss_chunk), std::to_string(c.shape.loss_chunk));
  if (st.shape.activation_dtype != c.shape.activation_dtype)
    differ("act_dtype", std::string(dtype_name(st.shape.activation_dtype)),
           std::string(dtype_name(c.shape.activation_dtype)));
  if (st.shape.packed != c.shape.packed)
    differ("packed rows", st.shape.packed ? "on" : "off", c.shape.packed ? "on" : "off");
  if (st.shape.row_loss_scales != c.shape.row_loss_scales)
    differ("per-row loss scales (a preference objective)", st.shape.row_loss_scales ? "on" : "off",
           c.shape.row_loss_scales ? "on" : "off");
  if (st.accum != std::max(c.accum, 1))
    differ("accum", std::to_string(st.accum), std::to_string(c.accum));
  if (st.seed != c.seed) differ("seed", std::to_string(st.seed), std::to_string(c.seed));
}

// "save"/"load" progress over `total` bytes, reported as pieces advance.
std::function<void(uint64_t)> progress_counter(const Session& s, const char* phase, uint64_t total,
                                               uint64_t& done) {
  const ProgressFn& progress = s.config().progress;
  report_progress(progress, phase, 0, total);
  return [&progress, phase, total, &done](uint64_t bytes) {
    report_progress(progress, phase, done += bytes, total);
  };
}

}  // namespace

SessionConfig session_config_of(const TrainingState& st) {
  SessionConfig c;
  c.model = st.model;
  c.shape = st.shape;
  c.accum = st.accum;
  c.seed = st.seed;
  c.policy = st.policy;
  c.arena_budget = st.arena_budget;
  c.optimizer = st.optimizer;
  c.schedule = st.schedule;
  return c;
}

TrainingState read_training_state(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw std::invalid_argument(dir.string() + ": no training state here (not a folder)");
  const fs::path json = dir / kStateJson;
  if (!fs::exists(json, ec))
    throw std::invalid_argument(json.string() + ": missing; not a complete training state");
  TrainingState st = parse_training_state(read_whole_file(json), json.string());
  for (const char* name : {kParams, kOptimizer}) {
    if (!fs::exists(dir / name, ec))
      throw std::invalid_argument((dir / name).string() +
                                  ": missing; not a complete training state");
    require_regular_file(dir / name);  // a device or FIFO: refused before anything opens it
  }
  return st;
}

void save_training_state(const Session& s, const fs::path& dir, const RunRecord& run) {
  AtomicFolder folder(dir, {kStateJson, kParams, kOptimizer});
  const auto params = parameter_tensors(s), moments = moment_tensors(s);
  uint64_t done = 0;
  const auto advanced =
      progress_counter(s, "save", tensor_bytes(s, params) + tensor_bytes(s, moments), done);
  Staging staging(s.device());
  TrainingState st;
  const SessionConfig& c = s.config();
  st.step = s.steps_done();
  st.model = c.model;
  st.shape = c.shape;
  st.accum = std::max(c.accum, 1);
  st.seed = c.seed;
  st.policy = c.policy;
  st.arena_budget = c.arena_budget;
  st.optimizer = c.optimizer;
  st.schedule = c.schedule;
  st.schedule.base_lr = c.optimizer.lr;
  st.run = run;
  st.params_hash = write_tensors(s, folder.temp_path() / kParams, params, staging, advanced);
  st.optimizer_hash = write_tensors(s, folder.temp_path() / kOptimizer, moments, staging, advanced);
  write_file_atomically(folder.temp_path() / kStateJson, training_state_json(st));
  folder.commit();
}

TrainingState load_training_state(Session& s, const fs::path& dir) {
  TrainingState st = read_training_state(dir);
  require_same_run(st, s.config(), dir);
  const auto params = parameter_tensors(s), moments = moment_tensors(s);
  const SafetensorsSource param_file = SafetensorsSource::open(dir / kParams);
  const SafetensorsSource moment_file = SafetensorsSource::open(dir / kOptimizer);
  const auto param_entries = match(param_file, params);
  const auto moment_entries = match(moment_file, moments);
  uint64_t done = 0;
  const auto advanced =
      progress_counter(s, "load", 2 * (tensor_bytes(s, params) + tensor_bytes(s, moments)), done);
  // First pass: every value readable and finite, every hash as recorded, before the device is
  // touched.
  verify(param_file, st.params_hash, advanced);
  verify(moment_file, st.optimizer_hash, advanced);
  try {
    Staging staging(s.device());
    upload(s, param_file, param_entries, params, staging, advanced);
    upload(s, moment_file, moment_entries, moments, staging, advanced);
  } catch (...) {
    // Parameters and moments are partly overwritten: fall back to what a fresh session holds.
    s.reset_training();
    throw;
  }
  s.restore_steps_done(st.step);
  return st;
}

}  // namespace remat
