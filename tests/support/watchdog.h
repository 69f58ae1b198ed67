// A guard for tests whose failure mode is to hang or to eat memory rather than to return: a
// reader that opens a FIFO blocks until some writer comes (none ever does), one that reads
// /dev/zero grows until the machine's memory runs out. While a Watchdog lives, a thread checks
// the process every few milliseconds and ends it with a message naming what was under way when
// it runs past its time or its resident memory passes the limit; the test then fails instead
// of hanging or taking the machine's memory from everything else on it.
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

namespace remat::test {

class Watchdog {
 public:
  explicit Watchdog(std::string what, std::chrono::seconds limit = std::chrono::seconds(120),
                    long long rss_limit_bytes = 2ll << 30)
      : what_(std::move(what)),
        thread_([this, limit, rss_limit_bytes] { watch(limit, rss_limit_bytes); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Resident bytes of this process (/proc/self/statm's second field, in pages).
  static long long resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    long long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * ::sysconf(_SC_PAGESIZE);
  }

 private:
  void watch(std::chrono::seconds limit, long long rss_limit_bytes) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
      if (std::chrono::steady_clock::now() > deadline)
        die("ran past " + std::to_string(limit.count()) + " s");
      if (resident_bytes() > rss_limit_bytes)
        die("holds more than " + std::to_string(rss_limit_bytes >> 20) + " MiB");
      wake_.wait_for(lock, std::chrono::milliseconds(5));
    }
  }
  [[noreturn]] void die(const std::string& why) {
    // On both streams: the test may have redirected stderr to capture a warning.
    for (std::FILE* out : {stdout, stderr}) {
      std::fprintf(out, "FAILED: watchdog: %s %s; stopping the test process\n", what_.c_str(),
                   why.c_str());
      std::fflush(out);
    }
    std::_Exit(3);
  }

  std::string what_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace remat::test
