// A Qwen3.5 model remat saved as GGUF (arch qwen35), run by llama.cpp itself
// (tests/training/llama_cpp_library.h): a random tiny file written as llama.cpp's converter
// writes one (tests/support/qwen35_files.h), loaded and saved by remat, loads in llama.cpp and
// gives the logits the original gives, bit for bit; so does the model saved from the Hugging Face
// folder of the same weights, which takes the converter's transforms from remat alone, its MTP
// layer written as the MTP block (formats/qwen35_mtp.h): llama.cpp finds each of its tensors by
// name and shape and reads it, and the main model's logits are those of the file without it. A
// model whose A_log was changed gives other logits (the comparison can fail).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <vector>

#include "tests/support/qwen35_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/training/llama_cpp_library.h"

using namespace remat;

#if REMAT_HAVE_LLAMA_H
namespace {

std::vector<std::vector<float>> logits_of(const test::LlamaCpp& l, const std::filesystem::path& p,
                                          const std::vector<uint32_t>& tokens, int vocab,
                                          bool load_mtp = false) {
  test::LlamaCppModel model(l, p, load_mtp);
  REQUIRE(model.loaded());
  return model.logits(tokens, vocab);
}

}  // namespace
#endif

TEST_CASE("a qwen35 GGUF remat saved runs in llama.cpp with the original's logits") {
#if REMAT_HAVE_LLAMA_H
  const test::LlamaCpp* l = test::llama_cpp();
  if (!l) return;
  test::TempFolder d("qwen35_gguf_llama_cpp");
  const ModelConfig m = test::tiny_qwen35();
  const test::Qwen35Weights w = test::qwen35_weights(m, 11);
  const auto mtp = test::qwen35_mtp_tensors(m, 11);
  GgufMetadata no_vocabulary("tokenizer");  // llama.cpp then takes token ids alone
  no_vocabulary.set("tokenizer.ggml.model", GgufValue::of(std::string("none")));
  test::write_qwen35_gguf(d / "in.gguf", m, w, mtp, no_vocabulary);
  test::write_qwen35_folder(d / "folder", m, w, mtp, true);
  test::save_qwen35_gguf(test::load_qwen35(d / "in.gguf"), d / "out.gguf");
  test::Qwen35Loaded from_folder = test::load_qwen35(d / "folder");
  test::save_qwen35_gguf(from_folder, d / "from_folder.gguf");

  const std::vector<uint32_t> tokens = test::random_indices(24, 5, uint32_t(m.vocab));
  const auto original = logits_of(*l, d / "in.gguf", tokens, m.vocab);
  CHECK(logits_of(*l, d / "out.gguf", tokens, m.vocab) == original);
  // The folder's A_log went through -exp in remat, not in the converter: the same floats here,
  // the same logits.
  CHECK(logits_of(*l, d / "from_folder.gguf", tokens, m.vocab) == original);
  // Its MTP block loads in llama.cpp, and leaves the main model's logits as they are without it.
  const GgufFile from_folder_file = GgufFile::open(d / "from_folder.gguf");
  CHECK(from_folder_file.metadata().uint("qwen35.nextn_predict_layers") == 1u);
  CHECK(from_folder_file.tensor("blk.4.nextn.eh_proj.weight") != nullptr);
  test::write_qwen35_gguf(d / "no_mtp.gguf", m, w, {}, no_vocabulary);
  const auto without_mtp = logits_of(*l, d / "no_mtp.gguf", tokens, m.vocab);
  CHECK(without_mtp == original);
  CHECK(logits_of(*l, d / "from_folder.gguf", tokens, m.vocab, true) == without_mtp);
  CHECK(logits_of(*l, d / "in.gguf", tokens, m.vocab, true) == without_mtp);

  for (std::size_t i = 0; i < from_folder.specs.size(); ++i)
    if (from_folder.specs[i].name == "model.layers.0.linear_attn.A_log")
      for (float& v : from_folder.values[i]) v += 0.5f;
  test::save_qwen35_gguf(from_folder, d / "changed.gguf");
  CHECK(logits_of(*l, d / "changed.gguf", tokens, m.vocab) != original);
#else
  test::llama_cpp();
#endif
}
