#include "text/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

namespace remat::text {

namespace {

constexpr std::string_view kWhiteSpace =
    R"(\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// Long runs (a megabyte of spaces) backtrack deep inside `\s+(?!\S)`; PCRE2's default 32 KiB JIT
// stack would fail on them.
constexpr std::size_t kJitStackBytes = std::size_t(64) << 20;

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

std::string with_unicode_whitespace(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (e == 'S') {
        if (in_class)
          throw std::invalid_argument("pattern '" + std::string(pattern) +
                                      "': \\S inside a character class is not supported");
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

std::string unicode_version() {
  char version[32] = {};
  pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, version);
  return version;
}

struct Regex::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_data* match = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  bool jit = false;
};

Regex::Regex(std::string_view pattern) : impl_(std::make_unique<Impl>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (!impl_->code)
    throw std::invalid_argument("pattern '" + std::string(pattern) + "' at offset " +
                                std::to_string(offset) + ": " + pcre2_message(error));
  impl_->match = pcre2_match_data_create(1, nullptr);
  impl_->context = pcre2_match_context_create(nullptr);
  // Without JIT support (some architectures) PCRE2's interpreter gives the same matches, slower.
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
  if (impl_->jit) {
    impl_->jit_stack = pcre2_jit_stack_create(32 << 10, kJitStackBytes, nullptr);
    pcre2_jit_stack_assign(impl_->context, nullptr, impl_->jit_stack);
  }
}

Regex::~Regex() {
  pcre2_jit_stack_free(impl_->jit_stack);
  pcre2_match_context_free(impl_->context);
  pcre2_match_data_free(impl_->match);
  pcre2_code_free(impl_->code);
}

bool Regex::find(std::string_view text, std::size_t from, std::size_t& begin, std::size_t& end) {
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  while (from < text.size()) {
    const int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), from, 0,
                                                impl_->match, impl_->context)
                              : pcre2_match(impl_->code, subject, text.size(), from, 0,
                                            impl_->match, impl_->context);
    if (rc == PCRE2_ERROR_NOMATCH) return false;
    if (rc < 0)
      throw std::invalid_argument("pre-tokenizer pattern failed at byte " + std::to_string(from) +
                                  ": " + pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(impl_->match);
    begin = ovector[0];
    end = ovector[1];
    if (end > begin) return true;
    from = begin + 1;  // an empty match cuts nothing; look further
  }
  return false;
}

namespace {

// Hugging Face's Split with behavior Isolated: matches and the text between them are pieces.
class IsolatingStage : public PreTokenizerStage {
 public:
  explicit IsolatingStage(std::string_view pattern) : regex_(with_unicode_whitespace(pattern)) {}
  void split(std::string_view text, bool first, const Emit& emit) override {
    split_isolated(regex_, text, first, emit);
  }
  Regex& regex() { return regex_; }

  // Calls emit(piece, first) for the matches of `regex` and the text between them.
  template <class F>
  static void split_isolated(Regex& regex, std::string_view text, bool first, const F& emit) {
    std::size_t at = 0, begin = 0, end = 0;
    while (regex.find(text, at, begin, end)) {
      if (begin > at) emit(text.substr(at, begin - at), first && at == 0);
      emit(text.substr(begin, end - begin), first && begin == 0);
      at = end;
    }
    if (at < text.size()) emit(text.substr(at), first && at == 0);
  }

 private:
  Regex regex_;
};

}  // namespace

void PreTokenizer::add_isolating_stage(std::string_view pattern) {
  auto stage = std::make_unique<IsolatingStage>(pattern);
  isolating_.push_back(&stage->regex());
  stages_.push_back(std::move(stage));
}

void PreTokenizer::add_stage(std::unique_ptr<PreTokenizerStage> stage) {
  isolating_.push_back(nullptr);
  stages_.push_back(std::move(stage));
}

void PreTokenizer::split(std::string_view text, const Emit& emit, bool first) {
  if (!text.empty()) split_from(0, text, first, emit);
}

void PreTokenizer::split_from(std::size_t stage, std::string_view text, bool first,
                              const Emit& emit) {
  if (stage == stages_.size()) {
    emit(text);
    return;
  }
  // Isolating stages (every byte-level pre-tokenizer) recurse directly: the hot path of encode.
  const auto next = [this, stage, &emit](std::string_view piece, bool piece_first) {
    if (!piece.empty()) split_from(stage + 1, piece, piece_first, emit);
  };
  if (Regex* regex = isolating_[stage])
    IsolatingStage::split_isolated(*regex, text, first, next);
  else
    stages_[stage]->split(text, first, next);
}

}  // namespace remat::text
