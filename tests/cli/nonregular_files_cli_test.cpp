// Every path the `remat` commands read or write, given a device (/dev/zero), a FIFO or a file
// of a folder that is one, is refused with exit status 2 and one `remat: error:` line naming
// it, before anything opens it (base/regular_file.h): nothing blocks on the FIFO, which nothing
// ever opens for writing, nothing reads /dev/zero until memory runs out, and no output replaces
// a FIFO or leaves a file behind. Each command runs under `timeout` and a memory limit, so a
// reader that forgets the check fails this test instead of hanging it or filling the machine.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tests/api/tiny_tokenizer.h"
#include "tests/support/run_command.h"

using remat::test::CommandResult;
using remat::test::run_command;
using remat::test::run_remat;
namespace fs = std::filesystem;

namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REMAT_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define REMAT_TEST_ASAN 1
#endif

// `remat ARGS` killed after two minutes and, but under AddressSanitizer (whose shadow memory
// needs the address space), held to 2 GiB of address space: lavapipe runs a small model in 1.
CommandResult run_guarded(const std::string& args) {
#ifdef REMAT_TEST_ASAN
  const std::string limit;
#else
  const std::string limit = "ulimit -v 2097152; ";
#endif
  return run_command(limit + "exec timeout -k 5 120 '" + REMAT_CLI_PATH + "' " + args);
}

std::string quote(const fs::path& p) {
  return "'" + p.string() + "'";
}

// Good inputs and, beside them, FIFOs in every place a file is read: named like what is read
// there, and inside folders (model, tokenizer, adapter, training state) in place of one of
// their files.
class Fixture {
 public:
  Fixture() : dir_(fs::temp_directory_path() / ("remat_nonreg_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::string text;
    while (text.size() < 4096) text += "hello, a file is read; a device or a pipe is refused. ";
    write("data.txt", text);
    write("chat.jsonl", R"({"messages": [{"role": "user", "content": "hi"}, )"
                        R"({"role": "assistant", "content": "hello"}]})"
                        "\n");
    write("messages.json", R"([{"role": "user", "content": "hi"}])");
    write("template.jinja",
          "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}");
    remat::test::write_tiny_tokenizer(dir_ / "tok");
    for (const char* name : {"fifo", "fifo.gguf", "fifo.safetensors"}) fifo(name);
    folders();
  }
  ~Fixture() { fs::remove_all(dir_); }

  fs::path operator/(const std::string& name) const { return dir_ / name; }
  std::string q(const std::string& name) const { return quote(dir_ / name); }
  std::set<std::string> entries() const {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) out.insert(e.path().string());
    return out;
  }
  std::vector<fs::path> fifos() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      if (e.is_fifo()) out.push_back(e.path());
    return out;
  }

 private:
  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  void fifo(const std::string& name) { REQUIRE(::mkfifo((dir_ / name).c_str(), 0600) == 0); }
  void copy(const std::string& from, const std::string& to) {
    fs::copy(dir_ / from, dir_ / to, fs::copy_options::recursive);
  }
  // `from` copied to `to` with its file `name` a FIFO.
  void copy_with_fifo(const std::string& from, const std::string& to, const std::string& name) {
    copy(from, to);
    fs::remove(dir_ / to / name);
    fifo(to + "/" + name);
  }

  void folders() {
    // A real model, training state and adapter, from one step of a small model each.
    const std::string small =
        "train --layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 --batch 2 "
        "--vocab 261 --steps 1 --quiet --data " +
        q("data.txt");
    const CommandResult base =
        run_remat(small + " --save " + q("model") + " --save-state " + q("state"));
    INFO(base.err);
    REQUIRE(base.exit_code == 0);
    const CommandResult lora =
        run_remat(small + " --init " + q("model") + " --lora 2 --save-adapter " + q("adapter"));
    INFO(lora.err);
    REQUIRE(lora.exit_code == 0);
    copy_with_fifo("model", "model_config_fifo", "config.json");
    copy_with_fifo("model", "model_weights_fifo", "model.safetensors");
    copy("model", "model_generation_fifo");
    fifo("model_generation_fifo/generation_config.json");
    fs::create_directories(dir_ / "model_index_fifo");
    copy("model/config.json", "model_index_fifo/config.json");
    fifo("model_index_fifo/model.safetensors.index.json");
    fs::create_directories(dir_ / "model_shard_fifo");
    copy("model/config.json", "model_shard_fifo/config.json");
    write("model_shard_fifo/model.safetensors.index.json",
          R"({"weight_map": {"wte.weight": "shard.safetensors"}})");
    fifo("model_shard_fifo/shard.safetensors");
    copy_with_fifo("state", "state_json_fifo", "state.json");
    copy_with_fifo("state", "state_params_fifo", "params.safetensors");
    copy_with_fifo("state", "state_moments_fifo", "optimizer.safetensors");
    copy_with_fifo("adapter", "adapter_config_fifo", "adapter_config.json");
    copy_with_fifo("adapter", "adapter_weights_fifo", "adapter_model.safetensors");
    copy_with_fifo("tok", "tok_vocab_fifo", "vocab.json");
    copy_with_fifo("tok", "tok_merges_fifo", "merges.txt");
    fs::create_directories(dir_ / "tok_json_fifo");
    fifo("tok_json_fifo/tokenizer.json");
    fs::create_directories(dir_ / "tok_gpt2_fifo");
    fifo("tok_gpt2_fifo/encoder.json");
    copy("tok/merges.txt", "tok_gpt2_fifo/vocab.bpe");
    copy_with_fifo("tok", "tok_config_fifo", "tokenizer_config.json");
  }

  fs::path dir_;
};

struct Case {
  std::string args;      // after "remat"
  std::string fragment;  // the line must hold this: the path, and what it is
};

void check_refused(const Fixture& fx, const Case& c) {
  const auto before = fx.entries();
  const CommandResult r = run_guarded(c.args);
  INFO("remat " << c.args << "\nexit " << r.exit_code << "\nstderr: " << r.err
                << "\nstdout: " << r.out);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("remat: error: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line
  CHECK(r.err.find(c.fragment) != std::string::npos);
  CHECK(fx.entries() == before);  // no output, no temporary, nothing replaced
}

// "<path>: is not a regular file (<kind>)": what every reader says of a device or FIFO.
std::string not_regular(const fs::path& p, const char* kind) {
  return p.string() + ": is not a regular file (" + kind + ")";
}

}  // namespace

TEST_CASE("every path remat reads refuses a device or FIFO in one line, without blocking") {
  Fixture fx;
  const std::string fifo = fx.q("fifo");
  const std::string data = " --data " + fx.q("data.txt");
  const std::string tok = " --tokenizer " + fx.q("tok");
  const std::string chat = " --vocab 261" + tok + " --data " + fx.q("chat.jsonl");
  const std::string small = "--layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 --batch 2 ";
  // Flags that read one file: each given /dev/zero and then the FIFO.
  const std::vector<std::string> file_flags = {
      "plan tiny --costs {}",
      "plan tiny --data {}",
      "plan tiny" + chat + " --chat-template {}",
      "plan tiny --vocab 261 --data " + fx.q("chat.jsonl") + " --tokenizer {}",
      "train tiny --steps 1 --data {}",
      "train " + small + "--steps 1" + data + " --val-data {}",
      "train " + small + "--steps 1" + data + " --costs {}",
      "train " + small + "--steps 1" + chat + " --chat-template {}",
      "train " + small + "--steps 1 --vocab 261" + data + " --tokenizer {}",
      "train --steps 1" + data + " --init {}",
      "plan --init {}",
      "bench tiny --costs {}",
      "tokenize --tokenizer {} " + fx.q("data.txt"),
      "tokenize" + tok + " {}",
      "tokenize" + tok + " --jsonl {}",
      "tokenize" + tok + " --jsonl " + fx.q("chat.jsonl") + " --chat-template {}",
      "detokenize --tokenizer {} " + fx.q("data.txt"),
      "detokenize" + tok + " {}",
      "generate --init {}" + tok + " --prompt hi",
      "generate --init " + fx.q("model") + " --tokenizer {} --prompt hi",
      "chat-template --tokenizer {} --messages " + fx.q("messages.json"),
      "chat-template --template {} --messages " + fx.q("messages.json"),
      "chat-template --template " + fx.q("template.jinja") + " --messages {}",
  };
  std::vector<Case> cases;
  for (std::string args : file_flags) {
    const std::size_t at = args.find("{}");
    REQUIRE(at != std::string::npos);
    cases.push_back({std::string(args).replace(at, 2, "/dev/zero"),
                     not_regular("/dev/zero", "a character device")});
    cases.push_back({args.replace(at, 2, fifo), not_regular(fx / "fifo", "a FIFO")});
  }
  // Paths whose name picks the reader (GGUF, safetensors, a shard index), and folders with a
  // FIFO in place of one of their files.
  const auto fifo_case = [&](const std::string& args, const std::string& file) {
    cases.push_back({args, not_regular(fx / file, "a FIFO")});
  };
  const std::string train = "train " + small + "--steps 1" + data;
  for (const char* file : {"fifo.gguf", "fifo.safetensors"}) {
    fifo_case("train --steps 1" + data + " --init " + fx.q(file), file);
    fifo_case("plan --init " + fx.q(file), file);
  }
  // plan reads a model folder's config.json, not its weights.
  fifo_case("plan --init " + fx.q("model_config_fifo"), "model_config_fifo/config.json");
  fifo_case("generate --init " + fx.q("model_generation_fifo") + tok + " --prompt hi",
            "model_generation_fifo/generation_config.json");
  fifo_case("tokenize --tokenizer " + fx.q("fifo.gguf") + " " + fx.q("data.txt"), "fifo.gguf");
  fifo_case(
      "chat-template --tokenizer " + fx.q("fifo.gguf") + " --messages " + fx.q("messages.json"),
      "fifo.gguf");
  for (const char* model :
       {"model_config_fifo/config.json", "model_weights_fifo/model.safetensors",
        "model_index_fifo/model.safetensors.index.json", "model_shard_fifo/shard.safetensors"}) {
    const std::string folder = fs::path(model).parent_path().string();
    fifo_case("train --steps 1" + data + " --init " + fx.q(folder), model);
    fifo_case("generate --init " + fx.q(folder) + tok + " --prompt hi", model);
  }
  for (const char* t : {"tok_vocab_fifo/vocab.json", "tok_merges_fifo/merges.txt",
                        "tok_json_fifo/tokenizer.json", "tok_gpt2_fifo/encoder.json"}) {
    const std::string folder = fs::path(t).parent_path().string();
    fifo_case("tokenize --tokenizer " + fx.q(folder) + " " + fx.q("data.txt"), t);
    fifo_case(train + " --vocab 261 --tokenizer " + fx.q(folder), t);
  }
  fifo_case("chat-template --tokenizer " + fx.q("tok_config_fifo") + " --messages " +
                fx.q("messages.json"),
            "tok_config_fifo/tokenizer_config.json");
  fifo_case("train " + small + "--steps 1 --vocab 261 --tokenizer " + fx.q("tok_config_fifo") +
                " --data " + fx.q("chat.jsonl"),
            "tok_config_fifo/tokenizer_config.json");
  for (const char* s : {"state_json_fifo/state.json", "state_params_fifo/params.safetensors",
                        "state_moments_fifo/optimizer.safetensors"})
    fifo_case("train --resume " + fx.q(fs::path(s).parent_path().string()), s);
  const std::string lora = train + " --vocab 261 --init " + fx.q("model") + " --lora 2";
  for (const char* a : {"adapter_config_fifo/adapter_config.json",
                        "adapter_weights_fifo/adapter_model.safetensors"})
    fifo_case(lora + " --lora-init " + fx.q(fs::path(a).parent_path().string()), a);
  fifo_case(lora + " --lora-init " + fx.q("fifo.gguf"), "fifo.gguf");
  cases.push_back({"train --resume /dev/zero", "/dev/zero: no training state here (not a folder)"});
  CHECK(cases.size() >= 75);
  for (const Case& c : cases) check_refused(fx, c);
  for (const fs::path& p : fx.fifos()) CHECK(fs::is_fifo(p));
}

TEST_CASE("every path remat writes refuses a FIFO in one line and leaves it a FIFO") {
  Fixture fx;
  const std::string train =
      "train --layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 --batch 2 "
      "--vocab 261 --steps 1 --data " +
      fx.q("data.txt");
  const std::string lora = train + " --init " + fx.q("model") + " --lora 2";
  const std::vector<Case> cases = {
      {train + " --save " + fx.q("fifo.safetensors"),
       (fx / "fifo.safetensors").string() + ": is not a regular file (a FIFO); outputs replace "
                                            "a file whole, give a file path"},
      {train + " --save " + fx.q("fifo.gguf"), not_regular(fx / "fifo.gguf", "a FIFO")},
      {train + " --log-json " + fx.q("fifo"), not_regular(fx / "fifo", "a FIFO")},
      {train + " --save-state " + fx.q("fifo"),
       (fx / "fifo").string() + ": is a FIFO; --save-state needs a folder"},
      {train + " --save " + fx.q("fifo"), (fx / "fifo").string() + ": is a FIFO; --save takes"},
      {lora + " --save-adapter " + fx.q("fifo.gguf"), not_regular(fx / "fifo.gguf", "a FIFO")},
      {lora + " --save-adapter " + fx.q("fifo"),
       (fx / "fifo").string() + ": is not a folder (a FIFO); --save-adapter needs a folder"},
      {lora + " --merge-out " + fx.q("fifo.safetensors"),
       not_regular(fx / "fifo.safetensors", "a FIFO")},
      {"tokenize --tokenizer " + fx.q("tok") + " " + fx.q("data.txt") + " --out " + fx.q("fifo"),
       not_regular(fx / "fifo", "a FIFO")},
      {"profile --layers 1 --dim 32 --heads 2 --ctx 16 --seq 16 --batch 2 --out " + fx.q("fifo"),
       not_regular(fx / "fifo", "a FIFO")},
      {"bench tiny --sweep --out " + fx.q("fifo"), (fx / "fifo").string() + ": exists and is not"},
  };
  for (const Case& c : cases) check_refused(fx, c);
  for (const fs::path& p : fx.fifos()) CHECK(fs::is_fifo(p));
}
