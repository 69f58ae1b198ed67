// A tokenizer folder with a ChatML chat template in its tokenizer_config.json, as models ship
// them, and a JSONL file of short chats for it: what the examples tests and the C sample's chat
// test train on.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace remat::test {

inline const char* kChatMlTemplate =
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

// Writes tokenizer_config.json (end of text and the ChatML template) into `dir`.
inline void write_chat_config(const std::filesystem::path& dir) {
  std::string escaped;
  for (const char c : std::string(kChatMlTemplate)) {
    if (c == '\n')
      escaped += "\\n";
    else
      escaped += c;
  }
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"eos_token": "<|endoftext|>", "chat_template": ")" << escaped << "\"}";
}

// `n` one-turn chats: "a+b" answered by its sum, one a line.
inline void write_chats(const std::filesystem::path& path, int n) {
  std::ofstream f(path, std::ios::binary);
  for (int i = 0; i < n; ++i)
    f << R"({"messages": [{"role": "user", "content": ")" << i << "+1\"}, "
      << R"({"role": "assistant", "content": ")" << i + 1 << "\"}]}\n";
}

}  // namespace remat::test
