// A GGUF model file as the tokenizer and chat template of `remat tokenize`, `remat chat-template`
// and `remat train --init M.gguf` (formats/gguf_tokenizer.h): llama.cpp's Qwen2 and GPT-2 test
// vocabularies (build-data/llama.cpp/models), and a small GPT-2 the test writes with the GPT-2
// vocabulary's tokenizer keys.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/json.h"
#include "formats/gguf.h"
#include "formats/gguf_names.h"
#include "formats/gguf_tokenizer.h"
#include "formats/gguf_writer.h"
#include "graph/model_builder.h"
#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"
#include "text/chat_examples.h"
#include "text/vocab_files.h"

using namespace remat;
using remat::test::run_remat;
namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) {
  return "'" + p.string() + "' ";
}

std::string ids_line(const std::vector<uint32_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "\n";
}

// Short turns: the model's context is 32 tokens.
const char* kChat =
    "{% for m in messages %}{{ m.role[0] + ': ' + m.content + eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}a: {% endif %}";

const char* kChats =
    "{\"messages\": [{\"role\": \"user\", \"content\": \"2+2?\"}, "
    "{\"role\": \"assistant\", \"content\": \"4\"}]}\n"
    "{\"messages\": [{\"role\": \"user\", \"content\": \"Capital of France?\"}, "
    "{\"role\": \"assistant\", \"content\": \"Paris.\"}]}\n";

// A one-layer GPT-2 (dim 32, 2 heads, ctx 32) with random weights, the tokenizer keys of
// llama.cpp's GPT-2 vocabulary and `chat_template` (none when empty).
fs::path write_gpt2_model(const test::TempFolder& d, const std::string& chat_template) {
  ModelConfig m = ModelConfig::preset("tiny");
  m.layers = 1;
  m.dim = 32;
  m.heads = 2;
  m.vocab = 50257;
  m.ctx = 32;
  GgufMetadata md = GgufFile::open(test::llama_test_vocabulary("gpt-2")).metadata();
  md.set("general.architecture", GgufValue::of("gpt2"));
  md.set("gpt2.block_count", GgufValue::of(uint32_t(m.layers)));
  md.set("gpt2.context_length", GgufValue::of(uint32_t(m.ctx)));
  md.set("gpt2.embedding_length", GgufValue::of(uint32_t(m.dim)));
  md.set("gpt2.feed_forward_length", GgufValue::of(uint32_t(m.mlp_width())));
  md.set("gpt2.attention.head_count", GgufValue::of(uint32_t(m.heads)));
  md.set("gpt2.attention.layer_norm_epsilon", GgufValue::of(1e-5f));
  if (!chat_template.empty()) md.set("tokenizer.chat_template", GgufValue::of(chat_template));
  const Graph g = build_model(m, TrainShape{1, 8});
  std::vector<GgufTensorSpec> specs;
  for (TensorId id : g.parameters) {
    const Tensor& t = g.tensors.at(std::size_t(id));
    const auto name = gguf_tensor_name(t.name, GgufArch::gpt2);
    REQUIRE(name);
    std::vector<uint64_t> ne;
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) ne.push_back(uint64_t(*it));
    if (ne.size() == 2 && gguf_layout(t.name, GgufArch::gpt2, m.heads, m.heads).transposed)
      std::swap(ne[0], ne[1]);
    specs.push_back({*name, GgmlType::f32, ne});
  }
  const fs::path path = d.path() / (chat_template.empty() ? "plain.gguf" : "model.gguf");
  GgufWriter w(path, md, specs);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (const GgufTensorSpec& s : specs) {
    std::vector<float> values(gguf_tensor_bytes(s) / 4);
    for (float& v : values) v = normal(rng);
    w.write(std::span<const float>(values));
  }
  w.commit();
  return path;
}

// The first loss `remat train` reports ("step 1/N  loss X ...").
std::string first_loss(const std::string& out) {
  const auto at = out.find("step 1/");
  if (at == std::string::npos) return "";
  const auto loss = out.find("loss ", at);
  return out.substr(loss + 5, out.find(' ', loss + 5) - loss - 5);
}

}  // namespace

TEST_CASE("remat tokenize and chat-template read a GGUF file's tokenizer and chat template") {
  if (!test::have_llama_cpp_source()) return;
  test::TempFolder d("gguf_tokenizer_cli");
  const fs::path qwen2 = test::llama_test_vocabulary("qwen2");
  const std::string text = "Hello<|im_start|>user\n[PAD151650] 123456 </s> é🙂\n";
  d.write("in.txt", text);
  auto tokenizer = load_gguf_tokenizer(qwen2).tokenizer;
  const auto ids = run_remat("tokenize --tokenizer " + quoted(qwen2) + d.quoted("in.txt"));
  INFO(ids.err);
  REQUIRE(ids.exit_code == 0);
  CHECK(ids.out == ids_line(tokenizer->encode(text)));
  const auto plain =
      run_remat("tokenize --no-special --tokenizer " + quoted(qwen2) + d.quoted("in.txt"));
  CHECK(plain.out == ids_line(tokenizer->encode(text, false)));
  CHECK(plain.out != ids.out);
  d.write("ids.txt", ids.out);
  CHECK(run_remat("detokenize --tokenizer " + quoted(qwen2) + d.quoted("ids.txt")).out == text);

  // The file's template renders the conversation; --jsonl encodes it as train reads it.
  d.write("m.json", R"([{"role": "user", "content": "hi"}])");
  const auto chat = run_remat("chat-template --tokenizer " + quoted(qwen2) + "--messages " +
                              d.quoted("m.json") + " --add-generation-prompt");
  INFO(chat.err);
  CHECK(chat.out ==
        "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nhi"
        "<|im_end|>\n<|im_start|>assistant\n");
  d.write("chats.jsonl", kChats);
  const auto jsonl =
      run_remat("tokenize --tokenizer " + quoted(qwen2) + "--jsonl " + d.quoted("chats.jsonl"));
  INFO(jsonl.err);
  REQUIRE(jsonl.exit_code == 0);
  auto examples = text::chat_examples_with(*tokenizer, load_gguf_tokenizer(qwen2).chat,
                                           qwen2.string(), std::nullopt);
  std::string want;
  for (const text::MaskedTokens& e : examples.encode_file(d.path() / "chats.jsonl")) {
    want += "{\"ids\":[";
    for (std::size_t i = 0; i < e.ids.size(); ++i)
      want += (i ? "," : "") + std::to_string(e.ids[i]);
    want += "],\"mask\":[";
    for (std::size_t i = 0; i < e.mask.size(); ++i)
      want += (i ? "," : "") + std::to_string(e.mask[i]);
    want += "]}\n";
  }
  CHECK(jsonl.out == want);

  // One line naming the file and the key.
  const fs::path gpt2 = test::llama_test_vocabulary("gpt-2");
  const auto none =
      run_remat("chat-template --tokenizer " + quoted(gpt2) + "--messages " + d.quoted("m.json"));
  CHECK(none.exit_code == 2);
  CHECK(none.err == "remat: error: " + gpt2.string() + ": tokenizer.chat_template is missing\n");
  const fs::path bert = test::llama_test_vocabulary("bert-bge");
  const auto refused = run_remat("tokenize --tokenizer " + quoted(bert) + d.quoted("in.txt"));
  CHECK(refused.exit_code == 2);
  CHECK(refused.err == "remat: error: " + bert.string() +
                           ": tokenizer.ggml.model 'bert' is not supported (remat reads "
                           "byte-level BPE, 'gpt2', and SentencePiece, 'llama', tokenizers)\n");
}

TEST_CASE("remat train --init M.gguf encodes --data with the file's tokenizer and chat template") {
  if (!test::have_llama_cpp_source() || !test::have_gpt2_files()) return;
  test::TempFolder d("gguf_train_cli");
  const fs::path model = write_gpt2_model(d, kChat);
  const std::string run = "train --init " + quoted(model) + "--seq 32 --batch 2 --steps 2 ";
  const std::string gpl = "/usr/share/common-licenses/GPL-3";

  // Text: the file's GPT-2 tokenizer, the same tokens as GPT-2's own files give.
  const auto from_gguf = run_remat(run + "--data " + gpl);
  INFO(from_gguf.out << from_gguf.err);
  REQUIRE(from_gguf.exit_code == 0);
  CHECK(from_gguf.out.find(" tokens, unigram entropy") != std::string::npos);
  const auto from_files = run_remat(run + test::gpt2_tokenizer_flag() + "--data " + gpl);
  REQUIRE(from_files.exit_code == 0);
  CHECK_FALSE(first_loss(from_gguf.out).empty());
  CHECK(first_loss(from_gguf.out) == first_loss(from_files.out));
  // --data-format bytes still trains on bytes.
  const auto bytes = run_remat(run + "--data-format bytes --data " + gpl);
  CHECK(bytes.exit_code == 0);
  CHECK(bytes.out.find(" bytes, unigram entropy") != std::string::npos);

  // JSONL conversations: rendered with the file's chat template.
  d.write("chats.jsonl", kChats);
  const auto chats = run_remat(run + "--data " + d.quoted("chats.jsonl"));
  INFO(chats.out << chats.err);
  CHECK(chats.exit_code == 0);
  CHECK(chats.out.find(": 2 examples, ") != std::string::npos);
  // A file without a template names itself and the flag that gives one.
  const fs::path plain = write_gpt2_model(d, "");
  const auto refused = run_remat("train --init " + quoted(plain) +
                                 "--seq 32 --batch 2 --steps 1 --data " + d.quoted("chats.jsonl"));
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find(plain.string() + " has no tokenizer.chat_template; give --chat-template "
                                          "FILE") != std::string::npos);
}
