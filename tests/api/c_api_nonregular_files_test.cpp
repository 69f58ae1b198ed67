// Every C API call that takes a path, given a device (/dev/zero), a FIFO, or a folder with a
// FIFO in place of one of its files, returns REMAT_ERROR_INVALID_ARGUMENT with one line naming
// the path, and an output path that is a FIFO stays a FIFO. The FIFOs are never opened for
// writing, so a reader that opened one would block for good: a watchdog ends the process with
// a message instead (and likewise if a reader of /dev/zero starts filling memory).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/api/chat_files.h"
#include "tests/api/check_error.h"
#include "tests/api/tiny_tokenizer.h"
#include "tests/support/temp_folder.h"
#include "tests/support/watchdog.h"

using remat::test::check_error;
using remat::test::small_params;
namespace fs = std::filesystem;

namespace {

struct Sessions {
  remat_device* device = nullptr;
  remat_session* full = nullptr;
  remat_session* lora = nullptr;
  Sessions() {
    REQUIRE(remat_device_open(nullptr, &device) == REMAT_OK);
    const remat_session_params p = small_params();
    REQUIRE(remat_session_create(device, &p, &full) == REMAT_OK);
    remat_session_params l = small_params();
    l.lora_rank = 2;
    REQUIRE(remat_session_create(device, &l, &lora) == REMAT_OK);
  }
  ~Sessions() {
    remat_session_free(lora);
    remat_session_free(full);
    remat_device_free(device);
  }
};

// Real files written by the API, then copies of their folders with one file a FIFO.
class Files {
 public:
  explicit Files(const Sessions& s) : dir_("nonreg_api") {
    REQUIRE(remat_session_save_file(s.full, (dir_ / "model").c_str()) == REMAT_OK);
    REQUIRE(remat_session_save_state(s.full, (dir_ / "state").c_str()) == REMAT_OK);
    REQUIRE(remat_session_save_adapter(s.lora, (dir_ / "adapter").c_str()) == REMAT_OK);
    remat::test::write_tiny_tokenizer(dir_ / "tok");
    remat::test::write_chat_config(dir_ / "tok");
    remat::test::write_chats(dir_ / "chat.jsonl", 3);
    std::ofstream(dir_ / "chat.jinja") << remat::test::kChatMlTemplate;
    for (const char* name : {"fifo", "fifo.gguf", "fifo.safetensors", "fifo.jsonl"}) fifo(name);
    with_fifo("model", "model_config_fifo", "config.json");
    with_fifo("model", "model_weights_fifo", "model.safetensors");
    with_fifo("state", "state_json_fifo", "state.json");
    with_fifo("state", "state_params_fifo", "params.safetensors");
    with_fifo("state", "state_moments_fifo", "optimizer.safetensors");
    with_fifo("adapter", "adapter_config_fifo", "adapter_config.json");
    with_fifo("adapter", "adapter_weights_fifo", "adapter_model.safetensors");
    with_fifo("tok", "tok_vocab_fifo", "vocab.json");
    with_fifo("tok", "tok_merges_fifo", "merges.txt");
    with_fifo("tok", "tok_config_fifo", "tokenizer_config.json");
  }
  std::string operator/(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<fs::path> fifos() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path()))
      if (e.is_fifo()) out.push_back(e.path());
    return out;
  }

 private:
  void fifo(const std::string& name) { REQUIRE(::mkfifo((dir_ / name).c_str(), 0600) == 0); }
  void with_fifo(const std::string& from, const std::string& to, const std::string& name) {
    fs::copy(dir_ / from, dir_ / to, fs::copy_options::recursive);
    fs::remove(dir_ / to / name);
    fifo(to + "/" + name);
  }
  remat::test::TempFolder dir_;
};

struct Call {
  std::string what;  // for the failure message
  std::function<remat_status()> run;
  std::string mentions;  // the line must hold this
};

std::string not_regular(const std::string& path, const char* kind) {
  return path + ": is not a regular file (" + kind + ")";
}

}  // namespace

TEST_CASE("every C API path refuses a device or FIFO as INVALID_ARGUMENT, without blocking") {
  Sessions s;
  Files f(s);
  const std::string zero = "/dev/zero";
  const std::string zero_line = not_regular(zero, "a character device");
  const std::string jsonl = f / "chat.jsonl", tok = f / "tok", jinja = f / "chat.jinja";
  std::vector<Call> calls;
  // Files and folders given where a model's weights are read.
  remat_session_params params = small_params();
  const auto params_from = [&](const std::string& path, const std::string& line) {
    calls.push_back({"params_from_file " + path,
                     [&, path] { return remat_session_params_from_file(&params, path.c_str()); },
                     line});
  };
  const auto load = [&](const std::string& path, const std::string& line) {
    calls.push_back({"load_file " + path,
                     [&, path] { return remat_session_load_file(s.full, path.c_str()); }, line});
  };
  using Add = std::function<void(const std::string&, const std::string&)>;
  for (const Add& add : {Add(params_from), Add(load)}) {
    add(zero, zero_line);
    for (const char* name : {"fifo", "fifo.gguf", "fifo.safetensors"})
      add(f / name, not_regular(f / name, "a FIFO"));
  }
  // Of a model folder, params_from_file reads config.json and load_file the weights.
  params_from(f / "model_config_fifo", not_regular(f / "model_config_fifo/config.json", "a FIFO"));
  load(f / "model_weights_fifo", not_regular(f / "model_weights_fifo/model.safetensors", "a FIFO"));
  // A quantized base is read when the params are: remat_plan needs no device.
  remat_session_params quantized = small_params();
  quantized.lora_rank = 2;
  const std::string gguf = f / "fifo.gguf";
  quantized.quantized_base = gguf.c_str();
  calls.push_back({"plan with quantized_base fifo.gguf",
                   [&] {
                     remat_plan_report r{sizeof r};
                     return remat_plan(&quantized, &r);
                   },
                   not_regular(gguf, "a FIFO")});
  // Training states.
  for (const char* name : {"state_json_fifo/state.json", "state_params_fifo/params.safetensors",
                           "state_moments_fifo/optimizer.safetensors"}) {
    const std::string dir = fs::path(f / name).parent_path().string();
    calls.push_back({"load_state " + dir,
                     [&, dir] { return remat_session_load_state(s.full, dir.c_str()); },
                     not_regular(f / name, "a FIFO")});
    calls.push_back({"params_from_state " + dir,
                     [&, dir] { return remat_session_params_from_state(&params, dir.c_str()); },
                     not_regular(f / name, "a FIFO")});
  }
  calls.push_back({"load_state /dev/zero",
                   [&] { return remat_session_load_state(s.full, "/dev/zero"); },
                   "/dev/zero: is not a folder (a character device)"});
  calls.push_back({"params_from_state fifo",
                   [&] { return remat_session_params_from_state(&params, (f / "fifo").c_str()); },
                   (f / "fifo") + ": is not a folder (a FIFO)"});
  // Adapters.
  for (const char* name : {"adapter_config_fifo/adapter_config.json",
                           "adapter_weights_fifo/adapter_model.safetensors"}) {
    const std::string dir = fs::path(f / name).parent_path().string();
    calls.push_back({"load_adapter " + dir,
                     [&, dir] { return remat_session_load_adapter(s.lora, dir.c_str()); },
                     not_regular(f / name, "a FIFO")});
  }
  calls.push_back({"load_adapter fifo.gguf",
                   [&] { return remat_session_load_adapter(s.lora, gguf.c_str()); },
                   not_regular(gguf, "a FIFO")});
  calls.push_back({"load_adapter /dev/zero",
                   [&] { return remat_session_load_adapter(s.lora, "/dev/zero"); },
                   "/dev/zero: is not a folder (a character device)"});
  // Tokenizers.
  const auto tokenizer = [&](const std::string& path, const std::string& line) {
    calls.push_back({"tokenizer_load " + path,
                     [&, path] {
                       remat_tokenizer* t = nullptr;
                       const remat_status st = remat_tokenizer_load(path.c_str(), &t);
                       remat_tokenizer_free(t);
                       return st;
                     },
                     line});
  };
  tokenizer(zero, zero_line);
  for (const char* name : {"fifo", "fifo.gguf"})
    tokenizer(f / name, not_regular(f / name, "a FIFO"));
  for (const char* name : {"tok_vocab_fifo/vocab.json", "tok_merges_fifo/merges.txt"})
    tokenizer(fs::path(f / name).parent_path().string(), not_regular(f / name, "a FIFO"));
  // Fine-tuning examples: the JSONL, the tokenizer and the chat template, by both calls.
  const auto examples = [&](std::string what, std::string j, std::string t, std::string c,
                            const std::string& line) {
    calls.push_back({"examples_load " + what,
                     [&, j, t, c] {
                       remat_examples* e = nullptr;
                       const remat_status st = remat_examples_load(
                           j.c_str(), t.c_str(), c.empty() ? nullptr : c.c_str(), 16, &e);
                       remat_examples_free(e);
                       return st;
                     },
                     line});
    calls.push_back({"examples_load_with " + what,
                     [&, j, t, c] {
                       remat_examples_options o{};
                       o.struct_size = sizeof o;
                       o.seq = 16;
                       o.pack = 1;
                       o.chat_template_path = c.empty() ? nullptr : c.c_str();
                       remat_examples* e = nullptr;
                       const remat_status st =
                           remat_examples_load_with(j.c_str(), t.c_str(), &o, &e);
                       remat_examples_free(e);
                       return st;
                     },
                     line});
  };
  examples("jsonl /dev/zero", zero, tok, "", zero_line);
  examples("jsonl fifo", f / "fifo.jsonl", tok, "", not_regular(f / "fifo.jsonl", "a FIFO"));
  examples("tokenizer /dev/zero", jsonl, zero, "", zero_line);
  examples("tokenizer fifo", jsonl, f / "fifo", "", not_regular(f / "fifo", "a FIFO"));
  examples("tokenizer_config fifo", jsonl, f / "tok_config_fifo", "",
           not_regular(f / "tok_config_fifo/tokenizer_config.json", "a FIFO"));
  examples("template /dev/zero", jsonl, tok, zero, zero_line);
  examples("template fifo", jsonl, tok, f / "fifo", not_regular(f / "fifo", "a FIFO"));
  // Token streams: the text and the tokenizer.
  const auto text_rows = [&](std::string what, std::string path, std::string t,
                             const std::string& line) {
    calls.push_back({"examples_load_text " + what,
                     [&, path, t] {
                       remat_text_options o{};
                       o.struct_size = sizeof o;
                       o.seq = 16;
                       o.vocab = 1000;
                       o.tokenizer_path = t.empty() ? nullptr : t.c_str();
                       remat_examples* e = nullptr;
                       const remat_status st = remat_examples_load_text(path.c_str(), &o, &e);
                       remat_examples_free(e);
                       return st;
                     },
                     line});
  };
  text_rows("text /dev/zero", zero, "", zero_line);
  text_rows("text fifo", f / "fifo", tok, not_regular(f / "fifo", "a FIFO"));
  text_rows("tokenizer fifo", jinja, f / "fifo", not_regular(f / "fifo", "a FIFO"));
  REQUIRE(calls.size() >= 43);

  const remat::test::Watchdog watchdog("a C API call given a device or FIFO",
                                       std::chrono::seconds(120),
                                       remat::test::Watchdog::resident_bytes() + (1ll << 30));
  for (const Call& c : calls) {
    INFO(c.what);
    check_error(c.run(), REMAT_ERROR_INVALID_ARGUMENT, c.mentions);
  }
  // The sessions were left as they were: a good file still loads.
  CHECK(remat_session_load_file(s.full, (f / "model").c_str()) == REMAT_OK);
  for (const fs::path& p : f.fifos()) CHECK(fs::is_fifo(p));
}

TEST_CASE("every C API save refuses a FIFO as INVALID_ARGUMENT and leaves it a FIFO") {
  Sessions s;
  remat::test::TempFolder d("nonreg_api_out");
  for (const char* name : {"fifo.safetensors", "fifo.gguf"})
    REQUIRE(::mkfifo((d / name).c_str(), 0600) == 0);
  const std::string st = (d / "fifo.safetensors").string(), gg = (d / "fifo.gguf").string();
  const remat::test::Watchdog watchdog("a C API save to a FIFO", std::chrono::seconds(120));
  check_error(remat_session_save_file(s.full, st.c_str()), REMAT_ERROR_INVALID_ARGUMENT,
              st + ": is not a regular file (a FIFO); outputs replace a file whole");
  check_error(remat_session_save_file(s.full, gg.c_str()), REMAT_ERROR_INVALID_ARGUMENT,
              not_regular(gg, "a FIFO"));
  check_error(remat_session_save_adapter(s.lora, gg.c_str()), REMAT_ERROR_INVALID_ARGUMENT,
              not_regular(gg, "a FIFO"));
  check_error(remat_session_save_merged(s.lora, st.c_str()), REMAT_ERROR_INVALID_ARGUMENT,
              not_regular(st, "a FIFO"));
  CHECK(fs::is_fifo(d / "fifo.safetensors"));
  CHECK(fs::is_fifo(d / "fifo.gguf"));
  CHECK(d.entries() == 2);  // no temporary left beside them
}
