// Sampling runs the plan's forward pass: a model that has learned a periodic text continues it.
#include <catch2/catch.hpp>

#include "formats/token_dataset.h"
#include "runtime/session.h"
#include "tests/support/test_device.h"

using namespace remat;

TEST_CASE("after learning a periodic text, greedy sampling continues the period") {
  SessionConfig c;
  c.model = ModelConfig{1, 32, 2, 256, 16};
  c.shape.batch = 4;
  c.shape.seq = 16;
  c.policy = Policy::parse("every:1");
  c.optimizer.lr = 1e-2;
  Session s(test::device(), c);
  std::string text;
  for (int i = 0; i < 400; ++i) text += "remat!"[i % 6];
  const auto data = TokenDataset::from_bytes(text, 16);
  float loss = 0;
  for (int step = 0; step < 60; ++step) {
    Batch b = data.batch(step, 4);
    loss = s.step(b.tokens, b.targets);
  }
  INFO("final loss " << loss);
  REQUIRE(loss < 0.1f);
  const std::vector<uint32_t> prompt = {'m', 'a', 't'};
  const auto out = s.sample(prompt, 14, 1, 0.0f);
  CHECK(std::string(out.begin(), out.end()) == "!remat!remat!r");
  // Same seed, same temperature: the same sample.
  CHECK(s.sample(prompt, 10, 5, 1.0f) == s.sample(prompt, 10, 5, 1.0f));
  CHECK_THROWS_WITH(s.sample({}, 3, 1), Catch::Contains("at least one token"));
}
