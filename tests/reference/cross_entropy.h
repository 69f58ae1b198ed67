// Plain reference for softmax + cross-entropy over the vocabulary, forward and backward side by
// side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace remat::ref {

// losses[r] = -log(softmax(logits[r,:])[targets[r]]), computed stably, or 0 where targets[r] is
// kIgnoreTarget. Resizes losses.
template <class T>
void cross_entropy_forward(std::vector<T>& losses, const std::vector<T>& logits,
                           const std::vector<uint32_t>& targets, std::size_t rows, std::size_t V);

// dlogits[r,v] = scale * (softmax(logits[r,:])[v] - (v == targets[r])), or 0 on a row whose
// target is kIgnoreTarget: the gradient of scale * sum(losses). Resizes dlogits.
template <class T>
void cross_entropy_backward(std::vector<T>& dlogits, const std::vector<T>& logits,
                            const std::vector<uint32_t>& targets, std::size_t rows, std::size_t V,
                            T scale);

}  // namespace remat::ref
