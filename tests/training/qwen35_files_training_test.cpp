// Qwen3.5 checkpoints through a session (runtime/session_weights.cpp, session_files.cpp): a random
// tiny Hugging Face folder (multimodal form, MTP layer, bf16 matrices) and a qwen35 GGUF file
// (tests/support/qwen35_files.h) load into a session with their values, save back tensor for
// tensor as the same bytes before any step, and after a training step save what was trained
// with the MTP layer and the untrained tensors' bytes as they were, which a fresh session loads
// back bit for bit; saved in the other format after training, the MTP layer is what an untrained
// save of it writes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "formats/hf_folder.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/qwen35_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"

using namespace remat;

namespace {

// The files' context: one 64-token block of the chunkwise delta rule, run whole.
constexpr int kSeq = 64;

SessionConfig config_of(const ModelConfig& m, uint64_t seed) {
  SessionConfig c;
  c.model = m;
  c.shape.batch = 1;
  c.shape.seq = kSeq;
  c.shape.delta_chunk = 0;
  c.policy = Policy::parse("none");
  c.optimizer.lr = 1e-2;
  c.seed = seed;
  c.pipeline_cache_dir = std::nullopt;
  return c;
}

void step(Session& s, const ModelConfig& m) {
  s.step(test::random_indices(kSeq, 3, uint32_t(m.vocab)),
         test::random_indices(kSeq, 4, uint32_t(m.vocab)));
}

// A fresh session of `path`'s model with `path` loaded.
std::vector<std::pair<std::string, std::vector<float>>> loaded(const std::filesystem::path& path) {
  Session s(test::device(), config_of(checkpoint_model(path, std::nullopt), 7));
  s.load(path);
  return s.parameters();
}

// The MTP block of a GGUF file's tensors: those of no trunk block.
test::Qwen35Raw mtp_block(const test::Qwen35Raw& raw, const ModelConfig& m) {
  test::Qwen35Raw out;
  for (const auto& [name, t] : raw)
    if (!qwen35_trunk_tensor(name, m)) out[name] = t;
  return out;
}

}  // namespace

TEST_CASE("a session loads a Qwen3.5 folder, saves it byte for byte and trains from it",
          "[qwen35_files]") {
  test::TempFolder d("qwen35_files_session_folder");
  const ModelConfig m = test::tiny_qwen35();
  const test::Qwen35Weights w = test::qwen35_weights(m, 21);
  test::write_qwen35_folder(d / "in", m, w, test::qwen35_mtp_tensors(m, 21), true);
  const test::Qwen35Raw in =
      test::text_names(test::safetensors_raw(d / "in" / "model.safetensors"));

  Session s(test::device(), config_of(checkpoint_model(d / "in", std::nullopt), 1));
  s.load(d / "in");
  const auto params = s.parameters();
  REQUIRE(params.size() == w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    INFO(w[i].name);
    CHECK(params[i].first == w[i].name);
    CHECK(params[i].second == w[i].values);
  }
  save_checkpoint(s, d / "out");
  CHECK(test::safetensors_raw(d / "out" / "model.safetensors") == in);
  CHECK(checkpoint_model(d / "out", std::nullopt) == m);

  step(s, m);
  save_checkpoint(s, d / "trained");
  const test::Qwen35Raw trained = test::safetensors_raw(d / "trained" / "model.safetensors");
  CHECK(trained.size() == in.size());
  for (const auto& [name, t] : in) {
    INFO(name);
    REQUIRE(trained.count(name) == 1);
    CHECK(std::get<0>(trained.at(name)) == std::get<0>(t));  // the dtype read
    if (name.starts_with("mtp.")) CHECK(trained.at(name) == t);
  }
  CHECK(trained.at("model.embed_tokens.weight") != in.at("model.embed_tokens.weight"));
  // bf16 matrices were trained in float32 and saved rounded: the reload is what was saved.
  const auto back = loaded(d / "trained");
  const auto now = s.parameters();
  for (std::size_t i = 0; i < now.size(); ++i) {
    INFO(now[i].first);
    if (std::get<0>(in.at(now[i].first)) == "F32") CHECK(back[i].second == now[i].second);
  }
  save_checkpoint(s, d / "trained_again");
  CHECK(test::read_bytes(d / "trained_again" / "model.safetensors") ==
        test::read_bytes(d / "trained" / "model.safetensors"));
  // Saved as GGUF, trained or not, the MTP layer is the same block: remat never trains it.
  GgufSaveOptions bf16;
  bf16.matrix_type = GgmlType::bf16;
  save_checkpoint(s, d / "trained.gguf", bf16);
  Session fresh(test::device(), config_of(checkpoint_model(d / "in", std::nullopt), 1));
  fresh.load(d / "in");
  save_checkpoint(fresh, d / "untrained.gguf", bf16);
  const test::Qwen35Raw block = mtp_block(test::gguf_raw(d / "trained.gguf"), m);
  CHECK(block.size() == test::qwen35_mtp_tensors(m, 21).size());
  CHECK(block == mtp_block(test::gguf_raw(d / "untrained.gguf"), m));
}

TEST_CASE("a session loads a qwen35 GGUF file, saves it byte for byte and trains from it",
          "[qwen35_files]") {
  test::TempFolder d("qwen35_files_session_gguf");
  const ModelConfig m = test::tiny_qwen35();
  test::write_qwen35_gguf(d / "in.gguf", m, test::qwen35_weights(m, 22),
                          test::qwen35_mtp_tensors(m, 22), GgufMetadata("none"), true);
  const test::Qwen35Raw in = test::gguf_raw(d / "in.gguf");
  Session s(test::device(), config_of(checkpoint_model(d / "in.gguf", std::nullopt), 1));
  s.load(d / "in.gguf");
  GgufSaveOptions bf16;
  bf16.matrix_type = GgmlType::bf16;
  save_checkpoint(s, d / "out.gguf", bf16);
  CHECK(test::gguf_raw(d / "out.gguf") == in);

  step(s, m);
  save_checkpoint(s, d / "trained.gguf", bf16);
  const test::Qwen35Raw trained = test::gguf_raw(d / "trained.gguf");
  CHECK(trained.size() == in.size());
  CHECK(trained.at("blk.4.nextn.eh_proj.weight") == in.at("blk.4.nextn.eh_proj.weight"));
  CHECK(trained.at("blk.0.ssm_a") != in.at("blk.0.ssm_a"));  // A_log trained: -exp(A_log)
  CHECK(trained.at("token_embd.weight") != in.at("token_embd.weight"));
  save_checkpoint(s, d / "trained_again.gguf", bf16);
  CHECK(test::read_bytes(d / "trained_again.gguf") == test::read_bytes(d / "trained.gguf"));
  // Saved as a folder after training, the MTP block is the mtp.* tensors it was (the converter's
  // inverse), and back as GGUF the bytes read.
  save_checkpoint(s, d / "trained_folder");
  const test::Qwen35Raw folder = test::safetensors_raw(d / "trained_folder" / "model.safetensors");
  for (const NamedTensor& t : test::qwen35_mtp_tensors(m, 22)) CHECK(folder.count(t.name) == 1);
  Session again(test::device(), config_of(checkpoint_model(d / "trained_folder", std::nullopt), 1));
  again.load(d / "trained_folder");
  save_checkpoint(again, d / "trained_back.gguf", bf16);
  CHECK(mtp_block(test::gguf_raw(d / "trained_back.gguf"), m) == mtp_block(in, m));
}
