#include "graph/graph.h"

#include <utility>

namespace remat {

TensorId Graph::add_tensor(std::string name, std::vector<int64_t> shape, DType dtype, Role role,
                           int block, bool persistent) {
  Tensor t;
  t.id = static_cast<TensorId>(tensors.size());
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.role = role;
  t.block = block;
  t.persistent = persistent;
  tensors.push_back(std::move(t));
  return tensors.back().id;
}

int Graph::add_op(Op op) {
  ops.push_back(std::move(op));
  return static_cast<int>(ops.size()) - 1;
}

std::vector<int> Graph::first_producers() const {
  std::vector<int> producer(tensors.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i)
    for (TensorId out : ops[i].outputs)
      if (producer[static_cast<size_t>(out)] < 0)
        producer[static_cast<size_t>(out)] = static_cast<int>(i);
  return producer;
}

ForwardIndex forward_index(const Graph& g) {
  ForwardIndex f{std::vector<int>(g.ops.size(), -1), std::vector<int>(g.tensors.size(), -1),
                 std::vector<std::vector<int>>(g.tensors.size())};
  int at = 0;
  for (const Block& b : g.blocks)
    for (int i : b.forward_ops) {
      f.position[static_cast<size_t>(i)] = at++;
      const Op& o = g.ops[static_cast<size_t>(i)];
      for (TensorId t : o.outputs) f.producer[static_cast<size_t>(t)] = i;
      for (TensorId t : o.inputs) f.consumers[static_cast<size_t>(t)].push_back(i);
    }
  return f;
}

}  // namespace remat
