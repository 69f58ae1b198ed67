// SIGINT and SIGTERM while `remat train` runs: the first asks the training loop to stop at the
// next step boundary (so the state it saves is a complete step), a second ends the process at
// once with status 128 + signal, touching no file: the last complete state stays as it was.
#pragma once

namespace remat::cli {

class StopSignals {
 public:
  StopSignals();   // installs the handlers
  ~StopSignals();  // restores the previous ones
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // 0, or the first signal received (SIGINT or SIGTERM).
  int received() const;
};

}  // namespace remat::cli
