#include "model_args.h"

namespace remat::cli {

std::set<std::string> model_value_flags() {
  return {"--model", "--layers",  "--dim",   "--heads", "--vocab",  "--ctx",  "--batch",
          "--seq",   "--dropout", "--dtype", "--arena", "--policy", "--costs"};
}

ModelSelection parse_model_selection(const Args& a, std::optional<ModelConfig> base,
                                     int default_batch) {
  ModelSelection o;
  if (!a.positionals().empty() && a.get("--model"))
    throw UsageError("give the model once, either as MODEL or as --model");
  if (base && (a.get("--model") || !a.positionals().empty()))
    throw UsageError("the model comes from --init; drop the model name");
  if (base) {
    o.model_name = "from checkpoint";
    o.model = *base;
  } else {
    o.model_name = a.positionals().empty() ? a.get("--model").value_or("tiny") : a.positionals()[0];
    o.model = ModelConfig::preset(o.model_name);
  }
  const int64_t big = 1 << 30;
  if (auto v = a.get_int("--layers", 1, 100000)) o.model.layers = static_cast<int>(*v);
  if (auto v = a.get_int("--dim", 1, big)) o.model.dim = static_cast<int>(*v);
  if (auto v = a.get_int("--heads", 1, big)) o.model.heads = static_cast<int>(*v);
  if (auto v = a.get_int("--vocab", 1, big)) o.model.vocab = static_cast<int>(*v);
  if (auto v = a.get_int("--ctx", 1, big)) o.model.ctx = static_cast<int>(*v);
  o.model.validate();
  if (!base) o.model_name = o.model.name();
  o.shape.batch = static_cast<int>(a.get_int("--batch", 1, big).value_or(default_batch));
  o.shape.seq = static_cast<int>(a.get_int("--seq", 1, big).value_or(o.model.ctx));
  if (auto d = a.get_double("--dropout")) o.shape.dropout = static_cast<float>(*d);
  if (auto d = a.get("--dtype")) o.shape.activation_dtype = parse_activation_dtype(*d);
  o.shape.validate(o.model);
  if (a.get("--arena") && a.get("--policy"))
    throw UsageError("give either --arena (auto picks the policy) or --policy, not both");
  o.arena = a.get_size("--arena");
  o.policy = o.arena ? Policy{Policy::Kind::automatic, 0}
                     : Policy::parse(a.get("--policy").value_or("none"));
  if (o.policy.kind == Policy::Kind::automatic && !o.arena)
    throw UsageError("--policy auto needs a budget: use --arena SIZE instead");
  if (auto f = a.get("--costs")) {
    try {
      o.costs = CostModel::load(*f);
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      if (what.find(*f) != std::string::npos) throw;
      throw UsageError("--costs " + *f + ": " + what +
                       "; give a cost table written by 'remat profile'");
    }
  }
  return o;
}

void require_f32_activations(const ModelSelection& sel) {
  const DType d = sel.shape.activation_dtype;
  if (d == DType::f32) return;
  const std::string name(dtype_name(d));
  throw UsageError("--dtype " + name +
                   ": 16-bit activation storage is not implemented yet; train and bench run f32 "
                   "(remat plan can plan " +
                   name + ")");
}

}  // namespace remat::cli
