// Catch2 entry point for GPU tests. After each test case, any new Vulkan validation message is
// printed with the test's name, and the run fails: a validation message is a bug.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "tests/support/test_device.h"

namespace remat::test {
void shutdown();
}

namespace {

int g_failed_cases = 0;
std::size_t g_seen = 0;

struct ValidationListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    const std::size_t now = remat::test::validation_message_count();
    if (now == g_seen) return;
    auto msgs = remat::test::device().instance().validation_messages();
    std::fprintf(stderr, "FAILED: %zu Vulkan validation message(s) during '%s':\n", now - g_seen,
                 stats.testInfo.name.c_str());
    for (std::size_t i = g_seen; i < msgs.size(); ++i) std::fprintf(stderr, "  %s\n", msgs[i].c_str());
    g_seen = now;
    ++g_failed_cases;
  }
};
CATCH_REGISTER_LISTENER(ValidationListener)

}  // namespace

int main(int argc, char** argv) {
  const int result = Catch::Session().run(argc, argv);
  remat::test::shutdown();
  if (g_failed_cases > 0) {
    std::fprintf(stderr, "%d test case(s) produced Vulkan validation messages\n", g_failed_cases);
    return result == 0 ? 1 : result;
  }
  return result;
}
