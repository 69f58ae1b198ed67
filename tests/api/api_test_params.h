// What the C API tests share: a small model that trains in milliseconds on lavapipe, a scratch
// directory, and batches of byte tokens.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "remat/remat.h"

namespace remat::test {

// 2 layers, 32 channels, vocabulary 64, batch 2 x 8 tokens.
inline remat_session_params small_params() {
  remat_session_params p;
  remat_session_params_default(&p);
  p.layers = 2;
  p.dim = 32;
  p.heads = 2;
  p.vocab = 64;
  p.ctx = 16;
  p.batch = 2;
  p.seq = 8;
  p.learning_rate = 1e-2;
  p.seed = 7;
  return p;
}

// Step s's tokens and targets: a repeating pattern (targets are the next token) a model learns.
struct Tokens {
  std::vector<uint32_t> tokens, targets;
};
inline Tokens pattern_batch(std::size_t count, uint32_t vocab, int step) {
  Tokens t;
  for (std::size_t i = 0; i < count; ++i) {
    t.tokens.push_back(static_cast<uint32_t>((i + step) % 5) % vocab);
    t.targets.push_back(static_cast<uint32_t>((i + step + 1) % 5) % vocab);
  }
  return t;
}

// A device and a session, freed in that order's reverse at scope end.
struct Handles {
  remat_device* device = nullptr;
  remat_session* session = nullptr;
  Handles() = default;
  Handles(const Handles&) = delete;
  Handles& operator=(const Handles&) = delete;
  ~Handles() {
    remat_session_free(session);
    remat_device_free(device);
  }
};

inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("remat_api_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace remat::test
