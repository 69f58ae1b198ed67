// Several remat devices in one process: each has its own instance and function tables, so
// sessions on two devices interleave step by step and both match a session alone, bit for bit.
#include <catch2/catch.hpp>

#include "tests/runtime/tiny_training.h"
#include "tests/support/test_device.h"

using namespace remat;

TEST_CASE("two devices train interleaved, each bit-identical to one device alone") {
  const InstanceOptions validate{.validation = true};
  auto a = Device::open({}, validate);
  auto b = Device::open({}, validate);
  REQUIRE(a->handle() != b->handle());
  REQUIRE(a->instance().handle() != b->instance().handle());

  std::vector<float> la, lb, alone;
  {
    Session sa(*a, test::tiny_config()), sb(*b, test::tiny_config());
    for (uint32_t step = 0; step < 2; ++step) {
      la.push_back(test::tiny_step(sa, step));
      lb.push_back(test::tiny_step(sb, step));
    }
    const bool same_parameters = test::parameter_bytes(sa) == test::parameter_bytes(sb);
    CHECK(same_parameters);  // the bytes themselves are not printed: megabytes
  }
  {
    Session s(test::device(), test::tiny_config());
    for (uint32_t step = 0; step < 2; ++step) alone.push_back(test::tiny_step(s, step));
  }
  CHECK(la[0] != la[1]);  // the steps trained
  CHECK(test::same_bits(la, alone));
  CHECK(test::same_bits(lb, alone));
  for (const auto& m : a->instance().validation_messages()) UNSCOPED_INFO(m);
  for (const auto& m : b->instance().validation_messages()) UNSCOPED_INFO(m);
  CHECK(a->instance().validation_message_count() == 0);
  CHECK(b->instance().validation_message_count() == 0);
}
