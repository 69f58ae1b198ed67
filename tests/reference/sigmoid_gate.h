// Plain reference for the gated attention's sigmoid output gate, y = x * sigmoid(gate), forward
// and backward side by side, written for clarity.
#pragma once

#include <cstddef>
#include <vector>

namespace remat::ref {

// The sigmoid gate's layout: x and y dense [rows of D]; row k's gate starts at
// k * gate_head_stride + gate_offset.
struct GateLayout {
  std::size_t count, D, gate_head_stride, gate_offset;
};

// y = x * sigmoid(gate). Resizes y.
template <class T>
void sigmoid_gate_forward(std::vector<T>& y, const std::vector<T>& x, const std::vector<T>& gate,
                          const GateLayout& l);

// dx (sized as x) and dgate (sized as gate: only the gate places written).
template <class T>
void sigmoid_gate_backward(std::vector<T>& dx, std::vector<T>& dgate, const std::vector<T>& dy,
                           const std::vector<T>& x, const std::vector<T>& gate, const GateLayout& l,
                           bool accumulate);

}  // namespace remat::ref
