#include "stop_signal.h"

#include <signal.h>
#include <unistd.h>

namespace remat::cli {
namespace {

volatile sig_atomic_t g_received = 0;
struct sigaction g_previous_int, g_previous_term;

void on_signal(int signo) {
  if (g_received != 0) _exit(128 + signo);  // async-signal-safe; no destructor, no flush
  g_received = signo;
}

}  // namespace

StopSignals::StopSignals() {
  g_received = 0;
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // file writes and device waits continue; the loop checks the flag
  sigaction(SIGINT, &sa, &g_previous_int);
  sigaction(SIGTERM, &sa, &g_previous_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int StopSignals::received() const {
  return g_received;
}

}  // namespace remat::cli
