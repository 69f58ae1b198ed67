/* Preference tuning (DPO) through the C API alone (remat/remat.h): what an app that collects
 * "this answer, not that one" from its users does with them on the device.
 *
 *   prefer TOKENIZER PAIRS.tsv STEPS [WEIGHTS]
 *
 * Each line of PAIRS.tsv is a prompt, the preferred answer and the other one, tab-separated.
 * Every answer becomes one row: the prompt's tokens then the answer's, trained only on the
 * answer (its targets; the prompt's are REMAT_IGNORE_TARGET). The session (params.preference,
 * LoRA r8 on WEIGHTS, or on the `tiny` model over the tokenizer's vocabulary) runs two pairs a
 * step: their chosen rows, then their rejected rows. Before the first step it computes every
 * row's reference log-prob once (remat_session_log_probs: the adapters are still 0, so this is
 * the base model) and keeps them; each step passes them back with the rows and prints DPO's
 * loss and TRL's metrics. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <remat/remat.h>

enum { kSeq = 32, kPairs = 2, kMaxPairs = 64 };

static int failed(remat_status status, const char* call) {
  if (status == REMAT_OK) return 0;
  fprintf(stderr, "prefer: error: %s: %s (%s)\n", call, remat_last_error(),
          remat_status_name(status));
  return 1;
}

/* Row `row` of [rows, kSeq]: `prompt` then `answer` (cut to kSeq + 1 tokens), targets only
 * inside the answer; returns the number of trained targets. */
static int make_row(remat_tokenizer* tok, const char* prompt, const char* answer, uint32_t* tokens,
                    uint32_t* targets) {
  uint32_t ids[kSeq + 1];
  size_t np = 0, na = 0;
  if (remat_tokenizer_encode(tok, prompt, strlen(prompt), 0, ids, kSeq + 1, &np) != REMAT_OK ||
      remat_tokenizer_encode(tok, answer, strlen(answer), 0, ids + np, kSeq + 1 - np, &na) !=
          REMAT_OK)
    return 0;
  const size_t n = np + na;
  int trained = 0;
  for (size_t t = 0; t < kSeq; ++t) {
    tokens[t] = t < n ? ids[t] : 0;
    const int in_answer = t + 1 < n && t + 1 >= np;
    targets[t] = in_answer ? ids[t + 1] : REMAT_IGNORE_TARGET;
    trained += in_answer;
  }
  return trained;
}

/* Fills `fields` with the file's prompt, chosen and rejected fields (modified in place). */
static int read_pairs(char* text, char* fields[][3]) {
  int n = 0;
  for (char* line = strtok(text, "\n"); line && n < kMaxPairs; line = strtok(NULL, "\n")) {
    char* a = strchr(line, '\t');
    char* b = a ? strchr(a + 1, '\t') : NULL;
    if (!b) continue;
    *a = *b = '\0';
    fields[n][0] = line;
    fields[n][1] = a + 1;
    fields[n][2] = b + 1;
    ++n;
  }
  return n;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s TOKENIZER PAIRS.tsv STEPS [WEIGHTS]\n", argv[0]);
    return 2;
  }
  static char text[1 << 16];
  FILE* f = fopen(argv[2], "rb");
  const size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
  if (f) fclose(f);
  text[got] = '\0';
  char* pairs[kMaxPairs][3];
  const int n = read_pairs(text, pairs);
  const int steps = atoi(argv[3]);
  if (n < 1 || steps < 1) {
    fprintf(stderr, "prefer: error: %s holds no prompt<TAB>chosen<TAB>rejected line\n", argv[2]);
    return 2;
  }
  remat_tokenizer* tok = NULL;
  if (failed(remat_tokenizer_load(argv[1], &tok), argv[1])) return 1;
  remat_session_params p;
  remat_session_params_default(&p);
  if (argc > 4 && failed(remat_session_params_from_file(&p, argv[4]), argv[4])) return 1;
  if (argc <= 4) {
    uint32_t vocab = 0;
    remat_tokenizer_vocab_size(tok, &vocab);
    p.vocab = (int32_t)vocab;
  }
  p.preference = 1;
  p.batch = kPairs; /* pairs a step: 2 x kPairs rows */
  p.seq = kSeq;
  p.lora_rank = 8;
  p.learning_rate = 5e-3;
  remat_device* dev = NULL;
  remat_session* s = NULL;
  if (failed(remat_device_open(NULL, &dev), "open device") ||
      failed(remat_session_create(dev, &p, &s), "create session") ||
      (argc > 4 && failed(remat_session_load_file(s, argv[4]), argv[4])))
    return 1;

  /* Batch k: pairs k*kPairs .. (mod n), chosen rows then rejected rows. */
  const int batches = n; /* enough batches to visit every pair */
  const size_t rows = 2 * kPairs, count = rows * kSeq;
  uint32_t* tokens = malloc(sizeof(uint32_t) * count * batches);
  uint32_t* targets = malloc(sizeof(uint32_t) * count * batches);
  double* reference = malloc(sizeof(double) * rows * batches);
  for (int k = 0; k < batches; ++k)
    for (int b = 0; b < kPairs; ++b) {
      char** pair = pairs[(k * kPairs + b) % n];
      for (int which = 0; which < 2; ++which) {
        const size_t r = (size_t)k * rows + (size_t)which * kPairs + (size_t)b;
        if (!make_row(tok, pair[0], pair[1 + which], tokens + r * kSeq, targets + r * kSeq)) {
          fprintf(stderr, "prefer: error: %s: pair %d's answer has no token within %d\n", argv[2],
                  (k * kPairs + b) % n + 1, kSeq);
          return 2;
        }
      }
    }
  /* The reference model's log-probs, once, before any step. */
  for (int k = 0; k < batches; ++k)
    if (failed(remat_session_log_probs(s, tokens + k * count, targets + k * count, count,
                                       reference + k * rows, rows),
               "log probs"))
      return 1;
  remat_preference_options o = remat_preference_options_default();
  remat_preference_metrics m;
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  for (int step = 0; step < steps; ++step) {
    const int k = step % batches;
    if (failed(remat_session_step_preference(s, &o, tokens + k * count, targets + k * count, count,
                                             reference + k * rows, rows, NULL, 0, &m),
               "preference step"))
      return 1;
    printf(
        "step %d  loss %.4f  rewards/accuracies %.2f  rewards/margins %.4f  logps/chosen "
        "%.3f  logps/rejected %.3f\n",
        step + 1, m.loss, m.rewards_accuracies, m.rewards_margins, m.logps_chosen,
        m.logps_rejected);
  }
  free(tokens);
  free(targets);
  free(reference);
  remat_session_free(s);
  remat_device_free(dev);
  remat_tokenizer_free(tok);
  return 0;
}
