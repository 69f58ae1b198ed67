// A small hand-made byte-level BPE vocabulary for tests: all 256 bytes (id = byte), then merges.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "text/bpe.h"

namespace remat::test {

struct SmallVocab {
  using Merges = std::vector<std::pair<std::string, std::string>>;
  std::vector<std::pair<std::string, text::TokenId>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;

  // Merges in rank order; each result gets the next id after the 256 bytes.
  explicit SmallVocab(const Merges& m) : merges(m) {
    for (int b = 0; b < 256; ++b) vocab.emplace_back(std::string(1, char(b)), text::TokenId(b));
    for (const auto& [a, b] : merges) vocab.emplace_back(a + b, text::TokenId(vocab.size()));
  }
};

}  // namespace remat::test
