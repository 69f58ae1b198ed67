// How a kernel writes a gradient (docs/ops.md): the first contribution to a gradient tensor in
// schedule order overwrites, later ones add. The autodiff decides; kernels obey.
#pragma once

#include <cstdint>

namespace remat::kernels {

enum class GradWrite : uint32_t { overwrite = 0, accumulate = 1 };

}  // namespace remat::kernels
