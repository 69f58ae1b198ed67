// Trains a GPT through remat::Session on token and target ids given in full, ignored targets
// (kIgnoreTarget) included, for tests/training/pytorch_masked_reference.py: the command line's
// data paths never produce ignored targets.
//
// usage: remat_masked_training_app CONFIG.json
// CONFIG: {"layers", "dim", "heads", "vocab", "ctx", "batch", "seq", "accum", "lr", "wd", "beta1",
//          "beta2", "eps", "grad_clip", "policy" ("none", "every:K", ... or "auto"), "arena"
//          (bytes, optional), "init" (safetensors to start from), "save" (where the weights go),
//          "steps": [{"tokens": [...], "targets": [...]}, ...]} with accum·batch·seq ids each;
//          optionally "packed": true, and then each step's "positions" (base/row_positions.h)
//          for tests/training/pytorch_packed_reference.py, and "arch": "llama" with "kv_heads",
//          "ffn" and "tied" for a Llama-family model (llama-tiny's other settings).
// Prints one JSON object per step ({"step", "loss", "grad_norm"}), then {"policy",
// "arena_bytes"}; exit status 1 with one line on stderr on any error.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "base/json.h"
#include "runtime/session.h"

using namespace remat;

namespace {

const JsonValue& member(const JsonValue& o, const std::string& key) {
  const JsonValue* v = o.find(key);
  if (!v) throw std::invalid_argument("the config has no \"" + key + "\"");
  return *v;
}

int integer(const JsonValue& o, const std::string& key) {
  return static_cast<int>(member(o, key).number);
}

std::vector<uint32_t> ids(const JsonValue& array) {
  std::vector<uint32_t> out;
  for (const JsonValue& v : array.array) out.push_back(static_cast<uint32_t>(v.number));
  return out;
}

SessionConfig session_config(const JsonValue& c) {
  SessionConfig s;
  s.model = ModelConfig{integer(c, "layers"), integer(c, "dim"), integer(c, "heads"),
                        integer(c, "vocab"), integer(c, "ctx")};
  if (const JsonValue* arch = c.find("arch"); arch && arch->string == "llama") {
    const ModelConfig gpt = s.model;
    s.model = ModelConfig::preset("llama-tiny");
    s.model.layers = gpt.layers;
    s.model.dim = gpt.dim;
    s.model.heads = gpt.heads;
    s.model.vocab = gpt.vocab;
    s.model.ctx = gpt.ctx;
    s.model.kv_heads = integer(c, "kv_heads");
    s.model.ffn = integer(c, "ffn");
    s.model.tied_head = member(c, "tied").boolean;
  }
  s.shape.batch = integer(c, "batch");
  s.shape.seq = integer(c, "seq");
  if (const JsonValue* packed = c.find("packed")) s.shape.packed = packed->boolean;
  s.accum = integer(c, "accum");
  s.policy = Policy::parse(member(c, "policy").string);
  if (const JsonValue* arena = c.find("arena")) s.arena_budget = uint64_t(arena->number);
  s.optimizer.lr = member(c, "lr").number;
  s.optimizer.weight_decay = member(c, "wd").number;
  s.optimizer.beta1 = member(c, "beta1").number;
  s.optimizer.beta2 = member(c, "beta2").number;
  s.optimizer.eps = member(c, "eps").number;
  s.optimizer.grad_clip = static_cast<float>(member(c, "grad_clip").number);
  s.pipeline_cache_dir = std::nullopt;
  return s;
}

void run_steps(Session& session, const JsonValue& c) {
  session.load(std::filesystem::path(member(c, "init").string));
  int step = 0;
  for (const JsonValue& s : member(c, "steps").array) {
    const JsonValue* positions = s.find("positions");
    const float loss = session.step(ids(member(s, "tokens")), ids(member(s, "targets")),
                                    positions ? ids(*positions) : std::vector<uint32_t>{});
    std::printf("{\"step\": %d, \"loss\": %.9g, \"grad_norm\": %.9g}\n", ++step, loss,
                session.last_grad_norm());
  }
  session.save(std::filesystem::path(member(c, "save").string));
  std::printf("{\"policy\": \"%s\", \"arena_bytes\": %llu}\n",
              session.plan().policy.to_string().c_str(),
              static_cast<unsigned long long>(session.plan().arena_bytes));
}

void train(const JsonValue& c) {
  // Under the validation layer, as every GPU test: any message fails the run.
  auto device = Device::open({}, InstanceOptions{.validation = true});
  {
    Session session(*device, session_config(c));
    run_steps(session, c);
  }
  if (const std::size_t n = device->instance().validation_message_count())
    throw std::runtime_error(std::to_string(n) + " validation messages, the first: " +
                             device->instance().validation_messages().front());
}
}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc != 2) throw std::invalid_argument("usage: remat_masked_training_app CONFIG.json");
    std::ifstream f(argv[1], std::ios::binary);
    if (!f) throw std::invalid_argument(std::string("cannot read ") + argv[1]);
    std::stringstream text;
    text << f.rdbuf();
    train(parse_json(text.str()));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "remat_masked_training_app: " << e.what() << "\n";
    return 1;
  }
}
