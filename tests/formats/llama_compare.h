// remat's GGUF tokenizer against llama.cpp's on the same file (tests/formats/llama_library.h):
// each text encoded three ways,
//   encode(text) (special tokens matched)         llama_tokenize(add_special 0, parse_special 1)
//   encode(text, specials off)                    llama_tokenize(add_special 0, parse_special 0)
//   post_processor().apply(encode(text))          llama_tokenize(add_special 1, parse_special 1)
// and, when asked, each encoding decoded by remat and by llama_detokenize (remove_special off,
// unparse_special on).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/formats/llama_library.h"
#include "tests/text/corpus.h"
#include "text/tokenizer.h"

namespace remat::test {

struct LlamaCounts {
  std::size_t texts = 0;
  std::size_t ids = 0;
  std::size_t decoded = 0;  // encodings decoded alike
};

// The first id where two encodings part, with a few ids around it, for the failure message.
inline std::string first_difference(const std::vector<uint32_t>& a,
                                    const std::vector<uint32_t>& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  auto around = [&](const std::vector<uint32_t>& v) {
    std::string s;
    for (std::size_t k = i >= 3 ? i - 3 : 0; k < v.size() && k < i + 4; ++k)
      s += (k == i ? " [" : " ") + std::to_string(v[k]) + (k == i ? "]" : "");
    return s;
  };
  return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
         ", first difference at id " + std::to_string(i) + ": remat" + around(a) + " | llama.cpp" +
         around(b);
}

inline void compare_with_llama(text::Tokenizer& remat, const LlamaVocabModel& llama,
                               const std::vector<CorpusText>& texts, LlamaCounts& counts,
                               bool decode = false) {
  for (const CorpusText& t : texts) {
    const std::vector<uint32_t> special = remat.encode(t.bytes);
    const std::vector<uint32_t> plain = remat.encode(t.bytes, false);
    const std::vector<uint32_t> added = remat.post_processor().apply(special);
    const auto want_special = llama.tokenize(t.bytes, false, true);
    const auto want_plain = llama.tokenize(t.bytes, false, false);
    const auto want_added = llama.tokenize(t.bytes, true, true);
    INFO("text '" << t.name << "'");
    const auto check = [](const char* how, const std::vector<uint32_t>& got,
                          const std::vector<uint32_t>& want) {
      if (got == want) return;
      INFO(how << ": " << first_difference(got, want));
      CHECK(got == want);
    };
    check("special tokens on", special, want_special);
    check("special tokens off", plain, want_plain);
    check("with add_special", added, want_added);
    counts.texts += 1;
    counts.ids += special.size() + plain.size() + added.size();
    if (!decode) continue;
    for (const auto* ids : {&want_special, &want_plain, &want_added}) {
      const std::string got = remat.decode(*ids), want = llama.detokenize(*ids);
      if (got != want) {
        const auto [g, w] = std::mismatch(got.begin(), got.end(), want.begin(), want.end());
        INFO("decoded: sizes " << got.size() << " and " << want.size() << ", part at byte "
                               << (g - got.begin()));
        CHECK(got == want);
      } else {
        counts.decoded += 1;
      }
    }
  }
}

}  // namespace remat::test
