// The test texts of llama.cpp's tokenizer tests (models/ggml-vocab-<name>.gguf.inp, in
// build-data/llama.cpp, tests/text/reference_data.h) and the ids Hugging Face gives them (.out),
// which llama.cpp's test-tokenizer-0 checks with add_special and parse_special off.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "text/vocab_files.h"

namespace remat::test {

// A test text of llama.cpp's and the ids its .out file gives for it.
struct VocabTest {
  std::string text;
  std::vector<uint32_t> ids;
};

// The .inp texts (separated by "\n__ggml_vocab_test__\n") and .out lines of a test vocabulary.
inline std::vector<VocabTest> llama_vocabulary_tests(const std::filesystem::path& gguf) {
  const std::string inp = text::read_file(gguf.string() + ".inp");
  const std::string out = text::read_file(gguf.string() + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<VocabTest> tests;
  for (std::size_t at = 0; at < inp.size();) {
    std::size_t next = inp.find(sep, at);
    if (next == std::string::npos) next = inp.size();
    tests.push_back({inp.substr(at, next - at), {}});
    at = next + sep.size();
  }
  std::size_t line = 0;
  for (std::size_t at = 0; at < out.size(); ++line) {
    std::size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    REQUIRE(line < tests.size());
    std::size_t used = 0;
    for (std::string ids = out.substr(at, end - at); !ids.empty(); ids = ids.substr(used)) {
      if (ids.find_first_not_of(' ') == std::string::npos) break;
      tests[line].ids.push_back(uint32_t(std::stoul(ids, &used)));
    }
    at = end + 1;
  }
  REQUIRE(line == tests.size());
  return tests;
}

}  // namespace remat::test
