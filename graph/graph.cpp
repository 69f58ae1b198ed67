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

}  // namespace remat
