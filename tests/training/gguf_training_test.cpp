// Training from a GGUF file (formats/gguf_model.h) is training from the same values in a
// safetensors file, bit for bit: for a float GGUF the values themselves, for a quantized one the
// values its blocks decode to (LoRA on the decoded base). Files are laid out as llama.cpp's
// converter writes them (tests/support/gguf_model_files.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "formats/gguf_blocks.h"
#include "formats/gguf_model.h"
#include "formats/hf_folder.h"
#include "formats/safetensors.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/gguf_model_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

// A Llama-family model whose rows are whole q8_0 blocks: C64, 4 query heads of 16 sharing 2
// key/value heads, MLP 96, vocabulary 300, an untied head.
SessionConfig block_llama(bool lora) {
  SessionConfig c;
  c.model = test::block_llama_model(300, 32, false);
  c.shape.batch = 2;
  c.shape.seq = 13;
  c.optimizer.lr = 1e-2;
  c.seed = 5;
  if (lora) c.lora.rank = 4;
  return c;
}

std::vector<test::GgufParam> params_of(const Session& s) {
  std::vector<test::GgufParam> out;
  for (TensorId id : s.plan().parameters) {  // a full fine-tuning session: every weight
    const Tensor& t = s.plan().tensors.at(static_cast<std::size_t>(id)).tensor;
    out.push_back({t.name, t.shape, s.values(id)});
  }
  return out;
}

std::vector<float> three_steps(Session& s) {
  const std::size_t n = std::size_t(s.config().shape.batch) * s.config().shape.seq;
  std::vector<float> losses;
  for (uint32_t step = 0; step < 3; ++step)
    losses.push_back(
        s.step(test::random_indices(n, 10 + step, 300), test::random_indices(n, 20 + step, 300)));
  return losses;
}

}  // namespace

TEST_CASE("a float GGUF model trains exactly as the same weights in safetensors") {
  test::TempFolder d("gguf_training");
  SessionConfig c = block_llama(false);
  const Session source(test::device(), c);
  for (GgmlType type : {GgmlType::f32, GgmlType::bf16}) {
    INFO(ggml_type_info(type).name);
    test::write_gguf_model(d / "m.gguf", params_of(source), c.model, GgufArch::llama, type);
    CHECK(checkpoint_model(d / "m.gguf", std::nullopt) == c.model);
    Session from_gguf(test::device(), c);
    from_gguf.load(d / "m.gguf");
    from_gguf.save(d / "decoded.safetensors");  // the values the GGUF gave, as F32
    Session from_safetensors(test::device(), c);
    from_safetensors.load(d / "decoded.safetensors");
    if (type == GgmlType::f32) CHECK(from_gguf.parameters() == source.parameters());
    CHECK(three_steps(from_gguf) == three_steps(from_safetensors));
    CHECK(from_gguf.parameters() == from_safetensors.parameters());
  }
}

TEST_CASE("LoRA on a q8_0 GGUF base trains exactly as on its decoded values") {
  test::TempFolder d("gguf_q8_training");
  SessionConfig c = block_llama(true);
  const Session source(test::device(), block_llama(false));
  const std::vector<test::GgufParam> params = params_of(source);
  test::write_gguf_model(d / "q8.gguf", params, c.model, GgufArch::llama, GgmlType::q8_0);

  // The decoded values, unpermuted, as a plain F32 checkpoint of Hugging Face names.
  const GgufWeights g(GgufFile::open(d / "q8.gguf"));
  REQUIRE(g.first_quantized() != nullptr);
  std::vector<NamedTensor> decoded;
  for (const SafetensorsEntry& e : g.header().tensors) {
    NamedTensor t{e.name, e.shape, std::vector<float>(static_cast<std::size_t>(e.elements()))};
    g.read(e, 0, t.values);
    decoded.push_back(std::move(t));
  }
  write_safetensors(d / "decoded.safetensors", decoded);
  // Quantization changed the values (the check below would be empty otherwise).
  const NamedTensor* q = nullptr;
  for (const NamedTensor& t : decoded)
    if (t.name == "model.layers.0.self_attn.q_proj.weight") q = &t;
  REQUIRE(q != nullptr);
  for (const test::GgufParam& p : params)
    if (p.name == q->name) CHECK(p.values != q->values);

  Session from_gguf(test::device(), c);
  from_gguf.load(d / "q8.gguf");
  Session from_safetensors(test::device(), c);
  from_safetensors.load(d / "decoded.safetensors");
  const std::vector<float> a = three_steps(from_gguf), b = three_steps(from_safetensors);
  CHECK(a == b);
  save_adapter(from_gguf, d / "a", "");
  save_adapter(from_safetensors, d / "b", "");
  CHECK(test::read_bytes(d / "a" / "adapter_model.safetensors") ==
        test::read_bytes(d / "b" / "adapter_model.safetensors"));
  CHECK(full_fine_tune_refusal(g, "add --lora R") ==
        (d / "q8.gguf").string() +
            ": tensor 'token_embd.weight' is q8_0; a quantized model is fine-tuned with LoRA: "
            "add --lora R");
}

// Trains LoRA on a q8_0 base kept in its blocks and on the same base decoded to f32: the same
// losses and adapters, bit for bit, under two checkpoint policies.
static void check_qlora(bool tied_head, int loss_chunk, const fs::path& dir) {
  SessionConfig decoded = block_llama(true);
  decoded.model.tied_head = tied_head;
  decoded.shape.loss_chunk = loss_chunk;
  SessionConfig full = decoded;
  full.lora.rank = 0;
  const Session source(test::device(), full);
  test::write_gguf_model(dir / "q8.gguf", params_of(source), decoded.model, GgufArch::llama,
                         GgmlType::q8_0);
  const GgufWeights g(GgufFile::open(dir / "q8.gguf"));
  SessionConfig blocks = decoded;
  blocks.shape.block_weights = g.block_weights();
  // Every quantized matrix is offered: the embedding table and the untied head too.
  const int matrices = 7 * decoded.model.layers + (tied_head ? 1 : 2);
  REQUIRE(blocks.shape.block_weights.size() == std::size_t(matrices));

  Session reference(test::device(), decoded);
  reference.load(dir / "q8.gguf");
  const std::vector<float> want = three_steps(reference);
  save_adapter(reference, dir / "reference", "");

  for (const char* policy : {"none", "every:1"}) {
    INFO(policy);
    blocks.policy = Policy::parse(policy);
    Session qlora(test::device(), blocks);
    qlora.load(dir / "q8.gguf");
    // Every one is kept in blocks: the projections and the head (a matmul, or the chunked
    // head and loss) and the token embedding read them.
    int kept = 0;
    for (TensorId id : qlora.plan().frozen) {
      const PlannedTensor& p = qlora.plan().tensors.at(std::size_t(id));
      if (p.tensor.dtype != DType::blocks) continue;
      ++kept;
      CHECK(p.tensor.blocks.name == "q8_0");
      CHECK(p.bytes == align_up(uint64_t(p.tensor.elements()) / 32 * 34, kBlockTensorPad));
      CHECK(qlora.values(id) == reference.values(id));  // the device holds the file's blocks
    }
    CHECK(kept == matrices);
    CHECK(qlora.plan().persistent_bytes < reference.plan().persistent_bytes);
    CHECK(three_steps(qlora) == want);
    save_adapter(qlora, dir / policy, "");
    CHECK(test::read_bytes(dir / policy / "adapter_model.safetensors") ==
          test::read_bytes(dir / "reference" / "adapter_model.safetensors"));
  }
}

TEST_CASE("QLoRA: a q8_0 base kept in its blocks trains exactly as on its decoded values") {
  test::TempFolder d("gguf_qlora_training");
  SECTION("untied head, whole logits") {
    check_qlora(false, 0, d.path());
  }
  SECTION("tied head, chunked loss") {
    check_qlora(true, 64, d.path());
  }
}
