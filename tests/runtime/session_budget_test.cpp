// A session plans Qwen3.5's delta-rule chunk when asked (SessionConfig::choose_delta_chunk): at a
// binding limit the whole sequence's backward workspace exceeds, the session given no chunk
// cannot be made, the one that chooses picks a chunk that fits and computes the same loss bits
// as the whole sequence does without the limit.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "planner/delta_chunk.h"
#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// B 4, T 1024: at a 2 MiB binding limit (SessionConfig::max_binding_bytes) every activation
// binds but the whole sequence's delta-rule backward workspace does not; the logits are chunked.
SessionConfig tiny_qwen35() {
  SessionConfig c;
  c.model = ModelConfig::preset("qwen3.5-tiny");
  c.model.ctx = 1024;
  c.shape.batch = 4;
  c.shape.seq = 1024;
  c.choose_loss_chunk = true;
  c.seed = 7;
  return c;
}

constexpr uint64_t kBinding = 2 << 20;

float first_loss(const SessionConfig& c) {
  Session s(test::device(), c);
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq;
  return s.step(test::random_indices(n, 1, uint32_t(c.model.vocab)),
                test::random_indices(n, 2, uint32_t(c.model.vocab)));
}

}  // namespace

TEST_CASE("a Qwen3.5 session chooses a delta-rule chunk that fits the binding limit") {
  const SessionConfig whole = tiny_qwen35();
  SessionConfig limited = whole;
  limited.max_binding_bytes = kBinding;
  REQUIRE(!delta_chunk_fits_binding(whole.model, whole.shape, 0, kBinding));

  // Given no chunk (the whole sequence), the session is refused at that limit.
  CHECK_THROWS_WITH(Session(test::device(), limited), Catch::Contains("linear_attn"));

  limited.choose_delta_chunk = true;
  Session chosen(test::device(), limited);
  const int chunk = chosen.config().shape.delta_chunk;
  CHECK(chunk > 0);
  CHECK(chunk < whole.shape.seq);
  CHECK(delta_chunk_fits_binding(whole.model, whole.shape, chunk, kBinding));

  // Every chunk length gives the same bits.
  const float a = first_loss(whole), b = first_loss(limited);
  CHECK(std::memcmp(&a, &b, sizeof a) == 0);
}
