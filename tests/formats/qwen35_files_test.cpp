// Qwen3.5 checkpoints in and out (formats/qwen35_file_extras.h, the qwen35 paths of
// formats/model_weights.h, gguf_model.h and gguf_model_writer.h), without a device: random tiny
// folders and GGUF files as transformers and llama.cpp's converter write them
// (tests/support/qwen35_files.h) load to their values, and save back tensor for tensor as the
// same bytes where nothing was trained; a save loaded and saved again is the same file.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "formats/gguf_model.h"
#include "formats/gguf_model_writer.h"
#include "formats/hf_folder.h"
#include "formats/model_weights.h"
#include "formats/qwen35_file_extras.h"
#include "formats/qwen35_mtp.h"
#include "formats/weight_files.h"
#include "tests/support/qwen35_files.h"
#include "tests/support/temp_folder.h"

using namespace remat;
namespace fs = std::filesystem;

TEST_CASE("a Qwen3.5 folder loads and saves back byte for byte", "[qwen35_files]") {
  test::TempFolder d("qwen35_files_folder");
  const ModelConfig m = test::tiny_qwen35();
  const test::Qwen35Weights w = test::qwen35_weights(m, 1);
  const auto mtp = test::qwen35_mtp_tensors(m, 1);
  test::write_qwen35_folder(d / "in", m, w, mtp, false);

  const test::Qwen35Loaded a = test::load_qwen35(d / "in");
  CHECK(a.m == m);
  REQUIRE(a.values.size() == w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    INFO(w[i].name);
    CHECK(a.specs[i].name == w[i].name);
    CHECK(a.values[i] == w[i].values);
  }
  CHECK(a.extras.mtp.size() == mtp.size());
  CHECK(a.extras.dtypes.at("model.layers.0.linear_attn.in_proj_qkv.weight") == "BF16");

  test::save_qwen35_folder(a, d / "out");
  // Every tensor as read: names, dtypes, shapes (conv1d [C, 1, K]) and bytes.
  CHECK(test::safetensors_raw(d / "out" / "model.safetensors") ==
        test::safetensors_raw(d / "in" / "model.safetensors"));
  CHECK(checkpoint_model(d / "out", std::nullopt) == m);
  // Saved, loaded and saved again: the same files.
  test::save_qwen35_folder(test::load_qwen35(d / "out"), d / "again");
  for (const char* f : {"model.safetensors", "config.json"})
    CHECK(test::read_bytes(d / "again" / f) == test::read_bytes(d / "out" / f));
}

TEST_CASE("a multimodal Qwen3.5 folder loads its text model and saves it alone", "[qwen35_files]") {
  test::TempFolder d("qwen35_files_multimodal");
  const ModelConfig m = test::tiny_qwen35();
  const test::Qwen35Weights w = test::qwen35_weights(m, 2);
  const auto mtp = test::qwen35_mtp_tensors(m, 2);
  test::write_qwen35_folder(d / "vl", m, w, mtp, true);
  test::write_qwen35_folder(d / "text", m, w, mtp, false);

  const test::Qwen35Loaded vl = test::load_qwen35(d / "vl");
  CHECK(vl.m == m);
  CHECK(vl.values == test::load_qwen35(d / "text").values);
  test::save_qwen35_folder(vl, d / "out");
  const test::Qwen35Raw saved = test::safetensors_raw(d / "out" / "model.safetensors");
  CHECK(saved == test::text_names(test::safetensors_raw(d / "vl" / "model.safetensors")));
  CHECK(saved.count("model.visual.blocks.0.attn.qkv.weight") == 0);
  // The text model's folder as remat saves it: config.json says qwen3_5_text.
  test::save_qwen35_folder(test::load_qwen35(d / "text"), d / "text_out");
  CHECK(test::read_bytes(d / "out" / "model.safetensors") ==
        test::read_bytes(d / "text_out" / "model.safetensors"));
  CHECK(test::read_bytes(d / "out" / "config.json") ==
        test::read_bytes(d / "text_out" / "config.json"));
}

TEST_CASE("a qwen35 GGUF file loads and saves back byte for byte", "[qwen35_files]") {
  test::TempFolder d("qwen35_files_gguf");
  const ModelConfig m = test::tiny_qwen35();
  const test::Qwen35Weights w = test::qwen35_weights(m, 3);
  const auto mtp = test::qwen35_mtp_tensors(m, 3);
  GgufMetadata tokenizer("tokenizer");
  tokenizer.set("tokenizer.ggml.model", GgufValue::of(std::string("none")));
  tokenizer.set("tokenizer.chat_template", GgufValue::of(std::string("{{ messages }}")));
  test::write_qwen35_gguf(d / "in.gguf", m, w, mtp, tokenizer);

  const test::Qwen35Loaded a = test::load_qwen35(d / "in.gguf");
  CHECK(a.m == m);
  REQUIRE(a.values.size() == w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    INFO(w[i].name);
    if (w[i].name.ends_with(".A_log")) {
      // log(-(-exp(A_log))): within a few float ulps, not exact (formats/gguf_qwen35.h).
      for (std::size_t k = 0; k < w[i].values.size(); ++k)
        CHECK(std::abs(a.values[i][k] - w[i].values[k]) < 1e-6f);
    } else {
      CHECK(a.values[i] == w[i].values);
    }
  }
  CHECK(a.extras.gguf_mtp.size() == mtp.size());
  CHECK(a.extras.ssm_a.size() == 2);

  test::save_qwen35_gguf(a, d / "out.gguf");
  CHECK(test::gguf_raw(d / "out.gguf") == test::gguf_raw(d / "in.gguf"));
  const GgufFile out = GgufFile::open(d / "out.gguf");
  CHECK(out.metadata().uint("qwen35.block_count") == uint64_t(m.layers + 1));
  CHECK(out.metadata().uint("qwen35.nextn_predict_layers") == 1u);
  CHECK(out.metadata().string("tokenizer.chat_template") == "{{ messages }}");
  CHECK(gguf_model_config(out) == m);
  test::save_qwen35_gguf(test::load_qwen35(d / "out.gguf"), d / "again.gguf");
  CHECK(test::read_bytes(d / "again.gguf") == test::read_bytes(d / "out.gguf"));
}

// Value heads of 8 beside key heads of 16: remat writes inner_size = 4 · 8 beside state_size 16,
// and reads the value heads' size back from them (formats/gguf_qwen35.cpp), so the file loads as
// the model it was saved from and saves back as the same bytes.
TEST_CASE("a qwen35 GGUF file with value heads smaller than its key heads round-trips",
          "[qwen35_files]") {
  test::TempFolder d("qwen35_files_gguf_dv");
  ModelConfig m = test::tiny_qwen35();
  m.qwen35_layers.linear_value_head_dim = 8;
  m.qwen35_layers.mtp_layers = 0;  // MTP layers stay within a format; this test crosses one
  m.validate();
  test::write_qwen35_folder(d / "in", m, test::qwen35_weights(m, 5), {}, false);
  const test::Qwen35Loaded folder = test::load_qwen35(d / "in");
  REQUIRE(folder.m == m);
  test::save_qwen35_gguf(folder, d / "a.gguf");
  const test::Qwen35Loaded a = test::load_qwen35(d / "a.gguf");
  CHECK(a.m == m);
  CHECK(a.value("model.layers.0.linear_attn.out_proj.weight") ==
        folder.value("model.layers.0.linear_attn.out_proj.weight"));
  CHECK(a.value("model.layers.0.linear_attn.norm.weight").size() == 8);
  test::save_qwen35_gguf(a, d / "b.gguf");
  CHECK(test::read_bytes(d / "b.gguf") == test::read_bytes(d / "a.gguf"));
}

TEST_CASE("a trained A_log is written as -exp(A_log), an untrained one as the bytes read",
          "[qwen35_files]") {
  test::TempFolder d("qwen35_files_ssm_a");
  const ModelConfig m = test::tiny_qwen35();
  // ssm_a that no float32 A_log gives: log then exp does not return some of them.
  test::write_qwen35_gguf(d / "in.gguf", m, test::qwen35_weights(m, 4), {}, GgufMetadata("none"),
                          true);
  test::Qwen35Loaded a = test::load_qwen35(d / "in.gguf");
  int not_inverted = 0;
  for (const Qwen35FileExtras::StoredSsmA& s : a.extras.ssm_a) {
    const std::vector<float> again =
        qwen35_to_gguf(s.a_log, {int64_t(s.loaded.size())}, s.loaded, m);
    not_inverted += std::memcmp(again.data(), s.ssm_a.bytes.data(), s.ssm_a.bytes.size()) != 0;
  }
  REQUIRE(not_inverted > 0);
  const std::string trained = "model.layers.0.linear_attn.A_log";
  std::vector<float>& a_log = const_cast<std::vector<float>&>(a.value(trained));
  for (float& v : a_log) v += 0.25f;
  test::save_qwen35_gguf(a, d / "out.gguf");
  const test::Qwen35Raw in = test::gguf_raw(d / "in.gguf"), out = test::gguf_raw(d / "out.gguf");
  for (const char* untrained : {"blk.2.ssm_a"}) CHECK(out.at(untrained) == in.at(untrained));
  // Loaded and saved untouched: every tensor as read, ssm_a included.
  const test::Qwen35Loaded b = test::load_qwen35(d / "in.gguf");
  test::save_qwen35_gguf(b, d / "untouched.gguf");
  CHECK(test::gguf_raw(d / "untouched.gguf") == in);
  // Trained: -exp(A_log), value heads in GGUF's order.
  const auto& bytes = std::get<2>(out.at("blk.0.ssm_a"));
  const std::vector<float> ssm_a = qwen35_to_gguf(trained, {int64_t(a_log.size())}, a_log, m);
  REQUIRE(bytes.size() == ssm_a.size() * sizeof(float));
  for (std::size_t k = 0; k < ssm_a.size(); ++k) {
    float v;
    std::memcpy(&v, bytes.data() + k * sizeof(float), sizeof v);
    CHECK(v == ssm_a[k]);
    CHECK(v < 0.0f);
  }
  CHECK(bytes != std::get<2>(in.at("blk.0.ssm_a")));
  // No MTP block was read, so none is written or counted.
  const GgufFile f = GgufFile::open(d / "out.gguf");
  CHECK(f.metadata().uint("qwen35.block_count") == uint64_t(m.layers));
  CHECK_FALSE(f.metadata().contains("qwen35.nextn_predict_layers"));
}

namespace {

// The tensors of `raw` whose names start with `prefix`, or that are of no trunk block of `m`.
test::Qwen35Raw mtp_of(const test::Qwen35Raw& raw, const ModelConfig& m, bool gguf) {
  test::Qwen35Raw out;
  for (const auto& [name, t] : raw)
    if (gguf ? !qwen35_trunk_tensor(name, m) : name.starts_with("mtp.")) out[name] = t;
  return out;
}

}  // namespace

TEST_CASE("Qwen3.5 across formats: a folder's MTP layers go to GGUF and come back as they were",
          "[qwen35_files]") {
  test::TempFolder d("qwen35_files_across");
  const ModelConfig m = test::tiny_qwen35();
  const test::Qwen35Weights w = test::qwen35_weights(m, 5);
  const auto mtp = test::qwen35_mtp_tensors(m, 5);
  test::write_qwen35_folder(d / "in", m, w, mtp, false);
  const test::Qwen35Loaded a = test::load_qwen35(d / "in");
  test::save_qwen35_gguf(a, d / "from_folder.gguf");
  const GgufFile f = GgufFile::open(d / "from_folder.gguf");
  CHECK(f.metadata().uint("qwen35.block_count") == uint64_t(m.layers + 1));
  CHECK(f.metadata().uint("qwen35.nextn_predict_layers") == 1u);
  CHECK(gguf_model_config(f) == m);
  // The MTP block holds what the converter makes of the folder's mtp.* tensors (its bytes where
  // its bf16 is the tensor's dtype; the F16 fc stays f16 here).
  test::write_qwen35_gguf(d / "converter.gguf", m, w, mtp);
  const test::Qwen35Raw block = mtp_of(test::gguf_raw(d / "from_folder.gguf"), m, true);
  const test::Qwen35Raw converter = mtp_of(test::gguf_raw(d / "converter.gguf"), m, true);
  REQUIRE(block.size() == mtp.size());
  for (const auto& [name, t] : converter) {
    INFO(name);
    REQUIRE(block.count(name));
    if (name == "blk.4.nextn.eh_proj.weight")
      CHECK(std::get<0>(block.at(name)) == "f16");
    else
      CHECK(block.at(name) == t);
  }

  const test::Qwen35Loaded b = test::load_qwen35(d / "from_folder.gguf");
  test::save_qwen35_folder(b, d / "back");
  CHECK(checkpoint_model(d / "back", std::nullopt) == m);
  CHECK(b.values.size() == a.values.size());
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    INFO(a.specs[i].name);
    if (!a.specs[i].name.ends_with(".A_log")) CHECK(b.values[i] == a.values[i]);
  }
  // Every mtp.* tensor as the folder held it: name, dtype, shape, bytes.
  const test::Qwen35Raw in =
      mtp_of(test::safetensors_raw(d / "in" / "model.safetensors"), m, false);
  CHECK(in.size() == mtp.size());
  CHECK(mtp_of(test::safetensors_raw(d / "back" / "model.safetensors"), m, false) == in);
}

TEST_CASE(
    "Qwen3.5 across formats: a GGUF file's MTP block goes to a folder and comes back as it "
    "was",
    "[qwen35_files]") {
  test::TempFolder d("qwen35_files_across_gguf");
  const ModelConfig m = test::tiny_qwen35();
  const auto mtp = test::qwen35_mtp_tensors(m, 7);
  test::write_qwen35_gguf(d / "in.gguf", m, test::qwen35_weights(m, 7), mtp);
  test::save_qwen35_folder(test::load_qwen35(d / "in.gguf"), d / "folder");
  CHECK(checkpoint_model(d / "folder", std::nullopt) == m);  // mtp_num_hidden_layers 1
  // The folder's mtp.* tensors: the converter's inverse (norms less one), bf16 as BF16.
  const test::Qwen35Raw folder =
      mtp_of(test::safetensors_raw(d / "folder" / "model.safetensors"), m, false);
  REQUIRE(folder.size() == mtp.size());
  for (const NamedTensor& t : mtp) {
    INFO(t.name);
    const auto& [dtype, shape, bytes] = folder.at(t.name);
    CHECK(shape == t.shape);
    REQUIRE(dtype == (t.shape.size() == 1 ? "F32" : "BF16"));
    std::vector<float> v(t.values.size());
    for (std::size_t k = 0; k < v.size(); ++k) {
      uint16_t h;
      if (dtype == "F32")
        std::memcpy(&v[k], bytes.data() + 4 * k, 4);
      else
        v[k] = bf16_to_float((std::memcpy(&h, bytes.data() + 2 * k, 2), h));
    }
    CHECK(v == t.values);  // every value a bfloat16: w + 1 - 1 is w
  }
  test::save_qwen35_gguf(test::load_qwen35(d / "folder"), d / "back.gguf");
  const test::Qwen35Raw in = mtp_of(test::gguf_raw(d / "in.gguf"), m, true);
  CHECK(in.size() == mtp.size());
  CHECK(mtp_of(test::gguf_raw(d / "back.gguf"), m, true) == in);
  const GgufFile back = GgufFile::open(d / "back.gguf");
  CHECK(back.metadata().uint("qwen35.nextn_predict_layers") == 1u);
  CHECK_FALSE(back.metadata().contains(std::string(kQwen35MtpDtypesKey)));  // all as typed
}

TEST_CASE("a Qwen3.5 checkpoint missing a tensor or of the wrong shape is refused by name",
          "[qwen35_files]") {
  test::TempFolder d("qwen35_files_refusals");
  const ModelConfig m = test::tiny_qwen35();
  test::Qwen35Weights w = test::qwen35_weights(m, 6);
  test::Qwen35Weights missing(w.begin() + 1, w.end());
  test::write_qwen35_folder(d / "missing", m, missing, {}, false);
  CHECK_THROWS_WITH(test::load_qwen35(d / "missing"), Catch::Contains("model.embed_tokens.weight"));
  for (NamedTensor& t : w)
    if (t.name == "model.layers.0.linear_attn.A_log") t.shape = {2, 2};
  test::write_qwen35_folder(d / "shape", m, w, {}, false);
  CHECK_THROWS_WITH(
      test::load_qwen35(d / "shape"),
      Catch::Contains("model.layers.0.linear_attn.A_log") && Catch::Contains("shape"));
}
