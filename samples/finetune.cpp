// Fine-tunes a GPT-2 checkpoint on a text file under a hard activation-memory cap, using the remat
// library directly: the shape an on-device fine-tuning app would copy.
//
//   remat_finetune_sample [--state DIR [--stop-after K]] [--pack] WEIGHTS.safetensors DATA_FILE
//   ARENA_BYTES STEPS OUT.safetensors [TOKENIZER]
//
// The model's shape comes from the weights file. With --state DIR the training state is saved in
// DIR at the end (or after step K) and a later run with the same DIR continues from it, with
// results bit-identical to a run never stopped. The text is read as bytes (vocabulary 256), or,
// given TOKENIZER (a GPT-2 or Hugging Face byte-level BPE folder or file), as its tokens. A .jsonl
// file holds fine-tuning examples (text, prompt/completion or chat messages, as `remat train --data
// X.jsonl` reads them), one per row, trained where the loss mask says; chat messages are rendered
// with the chat_template of TOKENIZER's tokenizer_config.json. With --pack several short examples
// share a row (first fit; each attends only to itself, its positions restart at 0): a packed
// session steps on the rows' tokens, targets and positions. A resumed run packs as its state says.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "formats/example_rows.h"
#include "formats/gpt2_weights.h"
#include "formats/safetensors.h"
#include "formats/token_dataset.h"
#include "runtime/session.h"
#include "runtime/training_state.h"
#include "runtime/vulkan/device.h"
#include "text/chat_examples.h"
#include "text/tokenizer_files.h"

namespace {

using Rows = std::variant<remat::TokenDataset, remat::ExampleRows>;

// The training rows of `file`: windows over its bytes, or its tokens under the tokenizer; or, for
// a .jsonl file, one fine-tuning example per row, whose untrained targets (the prompt, padding)
// are kIgnoreTarget, so that only the answers are learnt; with `pack` several to a row.
Rows read_rows(const std::filesystem::path& file, const char* tokenizer_path, int seq, bool pack) {
  const bool examples = file.extension() == ".jsonl";
  if (!tokenizer_path && examples)
    throw std::invalid_argument(file.string() + ": JSONL examples need a TOKENIZER");
  if (pack && !examples)
    throw std::invalid_argument("--pack packs JSONL examples; " + file.string() +
                                " is not a .jsonl file");
  if (!tokenizer_path) return remat::TokenDataset(file, seq);
  const auto tokenizer = remat::text::load_tokenizer(tokenizer_path);
  if (!examples)
    return remat::TokenDataset::from_tokens(tokenizer->encode(remat::read_data_file(file)), seq,
                                            file.string());
  auto chat = remat::text::chat_examples_for(*tokenizer, tokenizer_path, std::nullopt);
  std::vector<remat::TokenExample> rows;
  for (remat::text::MaskedTokens& m : chat.encode_file(file))
    rows.push_back({std::move(m.ids), std::move(m.mask), m.line});
  return remat::ExampleRows(std::move(rows), seq, /*pad=*/0, file.string(), std::nullopt, pack);
}

// How full the rows of one pass are, one example a row and packed: what --pack saves.
void print_packing(const Rows& data) {
  const auto* examples = std::get_if<remat::ExampleRows>(&data);
  if (!examples) return;
  const remat::PackingReport& p = examples->packing();
  std::printf(
      "rows: one example a row %llu (%.1f%% padding), packed %llu (%.1f%% padding); "
      "training on %s\n",
      static_cast<unsigned long long>(p.plain_rows), 100.0 * p.plain_padding(),
      static_cast<unsigned long long>(p.packed_rows), 100.0 * p.packed_padding(),
      examples->packed() ? "packed rows" : "one example a row");
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::filesystem::path> state;
  int stop_after = 0;
  bool pack = false;
  const char* program = argv[0];
  while (argc > 2 && std::string(argv[1]).starts_with("--")) {
    const std::string flag = argv[1];
    if (flag == "--pack") {
      pack = true;
      --argc, ++argv;
      continue;
    }
    if (flag == "--state")
      state = argv[2];
    else if (flag == "--stop-after")
      stop_after = std::stoi(argv[2]);
    else
      break;  // an unknown flag: the usage below
    argc -= 2, argv += 2;
  }
  if ((argc != 6 && argc != 7) || (stop_after && !state)) {
    std::fprintf(stderr,
                 "usage: %s [--state DIR [--stop-after K]] [--pack] WEIGHTS.safetensors DATA_FILE "
                 "ARENA_BYTES STEPS OUT.safetensors [TOKENIZER]\n",
                 program);
    return 2;
  }
  try {
    const std::filesystem::path weights = argv[1], data_file = argv[2], out = argv[5];
    const uint64_t arena_bytes = std::stoull(argv[3]);
    const int steps = std::stoi(argv[4]);

    // 1. The model shape (layers, width, heads, vocabulary, context) is read from the checkpoint.
    remat::SessionConfig config;
    config.model =
        remat::infer_gpt2_config(remat::SafetensorsSource::open(weights).header(), std::nullopt);
    config.shape.batch = 4;
    config.shape.seq = std::min(config.model.ctx, 64);

    // 2. Memory: activations must fit `arena_bytes`; the planner picks what to recompute.
    config.policy = remat::Policy::parse("auto");
    config.arena_budget = arena_bytes;
    // The LM head keeps whole logits where they fit the arena and one binding, else row chunks.
    config.choose_loss_chunk = true;

    // 3. AdamW settings for a short fine-tune.
    config.optimizer.lr = 1e-3;
    config.optimizer.weight_decay = 0.01;
    config.optimizer.grad_clip = 1.0f;
    config.schedule = {remat::LrDecay::cosine, 0, steps / 10, steps, 0.1};
    config.shape.packed = pack;  // a step also takes each token's position in its example
    // A run stopped earlier continues with its state's settings (packing included).
    const bool resume = state && std::filesystem::exists(*state / "state.json");
    if (resume) config = remat::session_config_of(remat::read_training_state(*state));

    // 4. The training rows (read_rows above). Every id must be below the model's vocabulary,
    //    checked before the device is touched.
    const Rows data =
        read_rows(data_file, argc == 7 ? argv[6] : nullptr, config.shape.seq, config.shape.packed);
    std::visit([&](const auto& d) { d.check_vocab(static_cast<std::size_t>(config.model.vocab)); },
               data);
    print_packing(data);

    // 5. Open the GPU (REMAT_DEVICE picks one), plan, allocate exactly, load the weights, or the
    //    state (parameters, AdamW moments, step count) of a run stopped earlier.
    auto device = remat::Device::open();
    remat::Session session(*device, config);
    if (resume)
      remat::load_training_state(session, *state);
    else
      session.load(weights);
    std::printf("device %s; arena %llu bytes (cap %llu), persistent %llu bytes\n",
                device->summary().c_str(),
                static_cast<unsigned long long>(session.plan().arena_bytes),
                static_cast<unsigned long long>(arena_bytes),
                static_cast<unsigned long long>(session.plan().persistent_bytes));

    // 6. Train: each step takes a batch of rows and returns the mean loss over their trained
    //    targets. The batch of step s is a function of s: a resumed run reads on where it stopped.
    float first = 0, last = 0;
    const int start = static_cast<int>(session.steps_done()),
              until = stop_after && stop_after < steps ? stop_after : steps;
    for (int s = start; s < until; ++s) {
      const remat::Batch batch = std::visit(
          [&](const auto& d) { return d.batch(static_cast<uint64_t>(s), config.shape.batch); },
          data);
      last = session.step(batch.tokens, batch.targets, batch.positions);  // positions: packed
      if (s == start) first = last;
      if (!std::isfinite(last)) throw std::runtime_error("the loss is not finite");
      std::printf("step %d loss %.4f\n", s + 1, last);
    }

    // 7. Save the state to continue from, or (atomically) the weights with Hugging Face names.
    if (state) remat::save_training_state(session, *state, {});
    if (state) std::printf("state saved in %s at step %d of %d\n", state->c_str(), until, steps);
    if (until < steps) return 0;
    session.save(out);
    std::printf("loss %.4f -> %.4f; saved %s\n", first, last, out.string().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "remat_finetune_sample: error: %s\n", e.what());
    return 1;
  }
}
