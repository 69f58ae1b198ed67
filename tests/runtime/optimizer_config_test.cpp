// One AdamW configuration for the session and the kernels, with torch.optim.AdamW's defaults.
#include <catch2/catch.hpp>

#include <type_traits>

#include "runtime/session.h"

namespace remat {

TEST_CASE("optimizer config: the session's and the kernels' AdamW config are one type") {
  STATIC_REQUIRE(std::is_same_v<OptimizerConfig, kernels::AdamWConfig>);
  const OptimizerConfig c;
  // torch.optim.AdamW(params) with nothing else given.
  CHECK(c.lr == 1e-3);
  CHECK(c.beta1 == 0.9);
  CHECK(c.beta2 == 0.999);
  CHECK(c.eps == 1e-8);
  CHECK(c.weight_decay == 1e-2);
  CHECK(c.grad_clip == 0.0f);
}

}  // namespace remat
