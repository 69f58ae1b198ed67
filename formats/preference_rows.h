// Preference data as token rows: TRL's dataset formats for DPO (paired) and KTO (unpaired), read
// from a JSONL file, one example a line (blank lines skipped), and batched for a step.
//
//   paired (DPO)    {"prompt": P, "chosen": A, "rejected": B}: P, A, B strings, or lists of
//                   messages (the conversational form); or the implicit prompt
//                   {"chosen": [...], "rejected": [...]}: two whole conversations whose longest
//                   common prefix of messages is the prompt and the rest each answer.
//   unpaired (KTO)  {"prompt": P, "completion": A, "label": true|false}: strings or messages.
//
// Each answer's row is the SFT row of the same prompt and completion (text/chat_examples.h):
// strings as a {"prompt", "completion"} example (with a chat template, the conversation [user:
// P, assistant: A]; without, P + A then the eos token, trained from A's first token); messages
// as the conversation P + A rendered with the chat template, where only A's assistant turns are
// trained (each the bytes between the rendering of what precedes it with the generation prompt
// and the rendering through it). Only trained tokens are scored: an answer's sequence log-prob
// is the sum of log p over its row's trained targets.
//
// Bad data is one std::invalid_argument "FILE: line N: ..." (a line that is not a JSON object, a
// missing field, a field of the wrong type, an empty answer or an answer with no assistant turn,
// chosen identical to rejected, a label that is not a JSON boolean).
//
// Rows are cut as SFT rows are (formats/example_rows.h: T+1 tokens, position t targets token
// t+1); a pair (or a labelled example) is dropped, and counted, when the cut leaves either
// answer no trained target. Batch `index` of B examples takes the kept examples index·B ..
// index·B + B − 1, modulo their count, in file order (micro-batch m of step s with accumulation
// a is index s·a + m, as SFT rows count). Its rows:
//   DPO  2B rows: the B chosen answers, then the B rejected answers, in the same order.
//   KTO  2B rows: the B labelled examples, then B KL rows, forward only: KL row b is example b's
//        prompt followed by the answer of example b − 1 (mod B) of the batch, as TRL's KTO
//        trainer pairs completions shifted by one within the batch to estimate the KL
//        reference point. Prompt and answer are the row's tokens before and from its first
//        trained token, joined as token ids (TRL concatenates its prompt and answer ids too),
//        and cut to T+1 tokens like every row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/example_rows.h"
#include "formats/token_dataset.h"
#include "text/chat_examples.h"
#include "text/tokenizer.h"

namespace remat {

enum class PreferenceObjective { dpo, kto };

// "dpo" or "kto".
const char* objective_name(PreferenceObjective objective);

struct PreferencePair {
  TokenExample chosen, rejected;  // line: the pair's line in its file
};

struct FeedbackExample {
  TokenExample completion;
  bool desirable = true;  // label true: thumbs up
};

struct PreferenceReport {
  std::size_t examples = 0;            // given: pairs (DPO) or labelled examples (KTO)
  std::size_t cut = 0;                 // kept, with an answer cut to T+1 tokens
  std::size_t dropped = 0;             // an answer with no trained target within T+1 tokens
  std::size_t first_dropped_line = 0;  // 0 when none is dropped
  std::size_t desirable = 0;           // KTO, kept: labelled true
  std::size_t undesirable = 0;         // KTO, kept: labelled false
};

class PreferenceRows {
 public:
  // The examples as read (not cut); `seq` is T, `pad` the input id of padded positions.
  // std::invalid_argument naming `origin` when no example is left.
  PreferenceRows(std::vector<PreferencePair> pairs, int seq, uint32_t pad, std::string origin);
  PreferenceRows(std::vector<FeedbackExample> feedback, int seq, uint32_t pad, std::string origin);

  PreferenceObjective objective() const { return objective_; }
  // Kept examples: pairs (DPO) or labelled examples (KTO).
  std::size_t size() const;
  // The rows batch `index` of `batch_size` examples runs: 2 · batch_size rows (above).
  Batch batch(uint64_t index, int batch_size) const;
  // The kept example (an index into pairs() or feedback()) at place b of batch `index`.
  std::size_t example_of(uint64_t index, int batch_size, int b) const;
  // KTO: the kept examples whose prompt and answer KL row b of batch `index` joins (so a
  // reference log-prob computed once can be kept per such pair).
  std::pair<std::size_t, std::size_t> kl_source(uint64_t index, int batch_size, int b) const;
  // KTO: the labels of batch `index`'s examples, 1 for desirable; DPO: empty.
  std::vector<uint8_t> desirable(uint64_t index, int batch_size) const;

  // The kept examples in file order, not cut (rows cut them).
  const std::vector<PreferencePair>& pairs() const { return pairs_; }
  const std::vector<FeedbackExample>& feedback() const { return feedback_; }
  const PreferenceReport& report() const { return report_; }
  const std::string& origin() const { return origin_; }
  int seq() const { return seq_; }
  uint32_t pad() const { return pad_; }
  // std::invalid_argument naming the origin, the example's line and the first id not below
  // `vocab`.
  void check_vocab(std::size_t vocab) const;

 private:
  // Counts the example as cut or dropped; whether it is kept.
  bool keep_or_drop(bool cut, bool empty, std::size_t line);
  void require_examples() const;

  PreferenceObjective objective_;
  std::vector<PreferencePair> pairs_;
  std::vector<FeedbackExample> feedback_;
  int seq_;
  uint32_t pad_;
  std::string origin_;
  PreferenceReport report_;
};

// Rows [rows.size(), seq] filled from `rows` as training rows are (fill_example_row), padded with
// `pad`: what a caller that holds its own examples (the C API) runs.
Batch example_batch(const std::vector<const TokenExample*>& rows, int seq, uint32_t pad);

// KTO's mismatched row: the tokens of `prompt_of` before its first trained token, then those of
// `answer_of` from its first trained token on, with their mask. Not cut.
TokenExample kl_example(const TokenExample& prompt_of, const TokenExample& answer_of);

// The examples of a JSONL text (`origin` names it in errors), encoded with `chat`.
std::vector<PreferencePair> encode_preference_pairs(std::string_view content,
                                                    const std::string& origin,
                                                    text::ChatExamples& chat);
std::vector<FeedbackExample> encode_feedback(std::string_view content, const std::string& origin,
                                             text::ChatExamples& chat);

// `file` read for `objective`, encoded with `tokenizer` and the chat template `tokenizer_path`
// carries (formats/tokenizer_source.h) or `chat_template`; padded inputs are id 0, as SFT rows'.
PreferenceRows read_preference_rows(const std::filesystem::path& file,
                                    PreferenceObjective objective, text::Tokenizer& tokenizer,
                                    const std::filesystem::path& tokenizer_path,
                                    const std::optional<std::filesystem::path>& chat_template,
                                    int seq);

}  // namespace remat
