// The error contract of the `remat` binary: every malformed invocation exits with status 2 and
// writes exactly one line to stderr, "remat: error: <what was wrong>; <what would be right>", with
// nothing on stdout and no output file (--save, --log-json) created.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tests/support/run_command.h"

using remat::test::run_remat;
namespace fs = std::filesystem;

namespace {

struct Case {
  std::string args;      // after "remat", relative paths resolved against the fixture folder
  std::string fragment;  // the message must name this
};

// A folder with good and bad inputs; removed at the end of the test.
class Fixture {
 public:
  Fixture() : dir_(fs::temp_directory_path() / ("remat_errors_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "a_folder");
    std::string text;
    while (text.size() < 4096) text += "the quick brown fox jumps over the lazy dog. ";
    write("data.txt", text);
    write("empty.txt", "");
    write("short.txt", "0123456789");  // --seq 16 needs at least 18 bytes
    write("garbage.safetensors", "this is not a safetensors file at all");
    // Valid safetensors, but not a GPT-2 checkpoint.
    const std::string header = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    std::string st(8, '\0');
    st[0] = static_cast<char>(header.size());
    write("not_gpt2.safetensors", st + header + std::string(4, '\0'));
    write("bad_costs.json", "{\"default\": ");
    // Hugging Face folders: configs remat refuses (a RoPE type it does not implement, llama3
    // scaling without its factors), one without weights.
    const std::string llama = R"({"model_type": "llama", "hidden_size": 32, "intermediate_size": 48,
      "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 256, )";
    fs::create_directories(dir_ / "hf_dynamic");
    write("hf_dynamic/config.json", llama + R"("rope_scaling": {"type": "dynamic", "factor": 2}})");
    fs::create_directories(dir_ / "hf_llama3");
    write("hf_llama3/config.json", llama + R"("rope_scaling": {"rope_type": "llama3"}})");
    fs::create_directories(dir_ / "hf_gemma_softcap");
    write("hf_gemma_softcap/config.json",
          R"({"model_type": "gemma3_text", "hidden_size": 32, "intermediate_size": 48,
      "num_hidden_layers": 1, "num_attention_heads": 2, "head_dim": 16, "vocab_size": 256,
      "final_logit_softcapping": 30.0})");
    // Qwen3.5's config without weights: refused where the weights are looked for.
    fs::create_directories(dir_ / "hf_qwen35");
    write("hf_qwen35/config.json", R"({"model_type": "qwen3_5", "text_config": {
      "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 4,
      "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 256,
      "linear_num_value_heads": 16, "partial_rotary_factor": 0.5,
      "rope_parameters": {"mrope_section": [2, 1, 1]}}})");
    fs::create_directories(dir_ / "hf_no_weights");
    write("hf_no_weights/config.json",
          R"({"model_type": "gpt2", "n_layer": 1, "n_embd": 32, "n_head": 2, "vocab_size": 256})");
    fs::create_symlink(dir_ / "nowhere.txt", dir_ / "dangling.txt");
    write("locked.txt", "no permission to read this");
    fs::permissions(dir_ / "locked.txt", fs::perms::none);
  }
  ~Fixture() { fs::remove_all(dir_); }

  std::string path(const std::string& name) const {
    std::string quoted = "'";
    quoted += (dir_ / name).string();
    return quoted + "'";
  }
  std::set<std::string> entries() const {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) out.insert(e.path().string());
    return out;
  }

 private:
  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  fs::path dir_;
};

// A small model that trains quickly on lavapipe, for the cases where train gets far enough.
const std::string kSmall = "--layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 --batch 2 --steps 1 ";
const std::string kSmallModel = "--layers 1 --dim 32 --ctx 16 --steps 1 ";

void check_contract(const Fixture& fx, const Case& c) {
  const auto before = fx.entries();
  const auto r = run_remat(c.args);
  INFO("remat " << c.args << "\nstderr: " << r.err << "\nstdout: " << r.out);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("remat: error: ", 0) == 0);
  CHECK(r.err.find('\n') == r.err.size() - 1);  // exactly one line
  CHECK(r.err.find(c.fragment) != std::string::npos);
  CHECK(r.out.empty());
  CHECK(fx.entries() == before);  // no output or temporary file left behind
}

}  // namespace

TEST_CASE("malformed remat invocations exit 2 with one line that says what was wrong") {
  Fixture fx;
  const std::string data = "--data " + fx.path("data.txt") + " ";
  // Every train case also asks for outputs, which must not appear.
  const std::string outputs =
      " --save " + fx.path("out.safetensors") + " --log-json " + fx.path("log.json");
  std::vector<Case> cases = {
      // No or unknown command.
      {"", "no command given; use one of devices, train, plan"},
      {"frobnicate", "unknown command 'frobnicate'"},
      // remat plan: flags and values.
      {"plan --bogus", "unknown flag '--bogus'"},
      {"plan --batch", "--batch needs a value"},
      {"plan --batch --json", "--batch needs a value"},
      {"plan --batch 2 --batch 3", "--batch given twice"},
      {"plan --batch abc", "--batch must be an integer, got 'abc'"},
      {"plan --batch 0", "--batch must be between 1 and"},
      {"plan --seq 0", "--seq must be between 1 and"},
      {"plan --layers 0", "--layers must be between 1 and"},
      {"plan --dim -1", "--dim must be between 1 and"},
      {"plan --ctx 99999999999", "--ctx must be between 1 and"},
      {"plan --json=yes", "--json takes no value"},
      {"plan tiny gpt2", "unexpected argument 'gpt2'"},
      {"plan tiny --model tiny", "either as MODEL or as --model"},
      {"plan --model gpt5", "unknown model 'gpt5'; use one of tiny, gpt2"},
      {"plan --seq 65", "seq (65) must be at most ctx (64)"},
      {"plan --heads 3", "heads (3) must divide dim (128)"},
      {"plan --dropout 1.5", "dropout must be in [0, 1)"},
      {"plan --dropout nan", "--dropout must be a finite number"},
      {"plan --dtype f8", "f8"},
      {"plan --alignment 0", "--alignment must be between 1 and"},
      {"plan --act-dtype f16 --dtype f16", "give --act-dtype once (--dtype is the same flag)"},
      {"plan --act-dtype int8", "f32, f16 or bf16"},
      // Sizes.
      {"plan --arena -5", "--arena must be positive, got '-5'; use bytes or a size like 48MiB"},
      {"plan --arena 12XB", "--arena has an unknown unit 'XB'"},
      {"plan --arena 0", "--arena must be at least 1 byte"},
      {"plan --arena ''", "--arena must be a size, got ''"},
      {"plan --arena lots", "--arena must be a size, got 'lots'"},
      {"plan --arena 1e30", "--arena is too large"},
      // Policies and budgets.
      {"plan --policy every:0", "needs a positive interval, e.g. every:4"},
      {"plan --policy every:x", "needs a positive interval, e.g. every:4"},
      {"plan --policy fancy", "unknown policy 'fancy'; use none, every:K"},
      {"plan --policy auto", "--policy auto needs a budget: use --arena SIZE"},
      {"plan --arena 8MiB --policy sqrt", "give either --arena"},
      {"plan gpt2 --layers 4 --vocab 512 --seq 256 --batch 2 --arena 1MiB",
       "below the smallest feasible plan; the minimum is "},
      {"plan --costs " + fx.path("missing.json"), "missing.json"},
      {"plan --costs " + fx.path("bad_costs.json"), "bad_costs.json: JSON: unexpected end"},
      // remat train: data.
      {"train " + kSmall + outputs, "--data FILE is required"},
      {"train " + kSmall + "--data " + fx.path("missing.txt") + outputs,
       "missing.txt: cannot open (No such file or directory)"},
      {"train " + kSmall + "--data " + fx.path("dangling.txt") + outputs,
       "dangling.txt: cannot open"},
      {"train " + kSmall + "--data " + fx.path("data.txt/child") + outputs,
       "cannot open (Not a directory)"},
      {"train " + kSmall + "--data " + fx.path("empty.txt") + outputs,
       "0 bytes is too short for --seq 16; it needs at least 18 bytes"},
      {"train " + kSmall + "--data " + fx.path("short.txt") + outputs,
       "10 bytes is too short for --seq 16; it needs at least 18 bytes"},
      {"train " + kSmall + "--data " + fx.path("a_folder") + outputs,
       "is a directory; --data needs a file"},
      // remat train: model, shape and policy.
      {"train " + kSmallModel + data + "--heads 2 --seq 17" + outputs,
       "seq (17) must be at most ctx (16)"},
      {"train " + kSmallModel + data + "--heads 3" + outputs, "heads (3) must divide dim (32)"},
      {"train " + kSmallModel + data + "--heads 2 --batch 0" + outputs,
       "--batch must be between 1 and"},
      {"train " + kSmall + data + "--vocab 100" + outputs, "needs --vocab of at least 256"},
      {"train " + kSmall + data + "--policy every:0" + outputs, "needs a positive interval"},
      {"train " + kSmall + data + "--policy sideways" + outputs, "unknown policy 'sideways'"},
      {"train " + kSmall + data + "--arena 8MiB --policy none" + outputs, "give either --arena"},
      {"train " + kSmall + data + "--arena 12XB" + outputs, "--arena has an unknown unit 'XB'"},
      {"train " + kSmall + data + "--arena 1KiB" + outputs,
       "below the smallest feasible plan; the minimum is "},
      // remat train: optimizer and run flags.
      {"train " + kSmall + data + "--lr 0" + outputs, "--lr must be positive"},
      {"train " + kSmall + data + "--lr -1" + outputs, "--lr must be positive"},
      {"train " + kSmall + data + "--lr fast" + outputs,
       "--lr must be a finite number, got 'fast'"},
      {"train " + kSmall + data + "--lr inf" + outputs, "--lr must be a finite number, got 'inf'"},
      {"train " + kSmall + data + "--wd -0.1" + outputs, "--wd must be at least 0"},
      {"train " + kSmall + data + "--beta1 1" + outputs, "--beta1 and --beta2 must be in [0, 1)"},
      {"train " + kSmall + data + "--eps 0" + outputs, "--eps must be positive"},
      {"train " + kSmall + data + "--grad-clip -1" + outputs, "--grad-clip must be at least 0"},
      {"train " + kSmall + data + "--seed -1" + outputs, "--seed must be between 0 and"},
      {"train --layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 " + data + "--steps 0" + outputs,
       "--steps must be between 1 and"},
      {"train " + kSmall + data + "--save-every 2", "--save-every needs --save"},
      {"train " + kSmall + data + "--quiet=1" + outputs, "--quiet takes no value"},
      // remat train: files it reads and writes.
      {"train " + kSmall + data + "--save " + fx.path("no_such_folder/w.safetensors"),
       "no_such_folder: no such folder for --save"},
      {"train " + kSmall + data + "--save " + fx.path("short.txt"),
       "short.txt: is a file; --save takes a path ending in .safetensors or a folder"},
      {"train " + kSmall + data + "--save " + fx.path("no_such_folder/out"),
       "no_such_folder: no such folder for --save"},
      {"train " + kSmall + data + "--log-json " + fx.path("no_such_folder/log.json"),
       "no_such_folder: no such folder for --log-json"},
      {"train " + kSmall + data + "--log-json " + fx.path("a_folder"),
       "is a directory; --log-json needs a file"},
      {"train " + kSmall + data + "--init " + fx.path("garbage.safetensors") + outputs,
       "garbage.safetensors: header length"},
      {"train " + data + "--init " + fx.path("missing.safetensors") + outputs,
       "missing.safetensors: cannot open"},
      {"train " + data + "--init " + fx.path("not_gpt2.safetensors") + outputs,
       "not_gpt2.safetensors: not a GPT-2 checkpoint"},
      {"train " + data + "--init " + fx.path("a_folder") + outputs,
       "a_folder: is a folder without config.json"},
      {"train " + data + "--init " + fx.path("hf_dynamic") + outputs,
       R"(hf_dynamic/config.json: rope_scaling is {"factor":2,"type":"dynamic"})"},
      {"train " + data + "--init " + fx.path("hf_llama3") + outputs,
       "hf_llama3/config.json: rope_scaling of rope_type llama3 has no 'factor'"},
      {"train " + data + "--init " + fx.path("hf_gemma_softcap") + outputs,
       "hf_gemma_softcap/config.json: final_logit_softcapping is 30"},
      {"train " + data + "--init " + fx.path("hf_no_weights") + outputs,
       "hf_no_weights: is a folder without model.safetensors or model.safetensors.index.json"},
      {"generate --tokenizer " + fx.path("a_folder") + " --prompt x --init " +
           fx.path("hf_dynamic"),
       "rope_scaling is"},
      {"train " + data + "--init " + fx.path("hf_qwen35") + outputs,
       "hf_qwen35: is a folder without model.safetensors"},
      {"plan qwen3.5-0.8b --batch 4 --seq 512 --delta-chunk x", "--delta-chunk"},
  };
  if (::geteuid() != 0)  // root reads files whatever their permissions
    cases.push_back({"train " + kSmall + "--data " + fx.path("locked.txt") + outputs,
                     "locked.txt: cannot open (Permission denied)"});
  CHECK(cases.size() >= 40);
  for (const Case& c : cases) check_contract(fx, c);
}
