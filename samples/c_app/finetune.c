/* Fine-tunes a checkpoint on a text file under a hard activation-memory cap, through the C API
 * alone (remat/remat.h): what an app written in C, or bound from Swift, Kotlin or Rust, does.
 *
 *   finetune [--state DIR [--stop-after K]] [--pack] WEIGHTS DATA_FILE ARENA_BYTES STEPS OUT
 *            [TOKENIZER]
 *
 * WEIGHTS is a .safetensors file, a .gguf model or a Hugging Face model folder of any family
 * remat trains (GPT-2, Llama, SmolLM2, Qwen2, Llama 3.2, Qwen3); the whole model, family
 * included, comes from it. OUT is written as the same kind: a path ending in .safetensors or
 * .gguf is one file, any other a folder with the model's own config.json. The learning rate follows
 * a cosine schedule over STEPS. With --state DIR the training state (weights, AdamW moments, step,
 * settings) is saved in DIR at the end, or after step K with --stop-after K; run again with the
 * same --state DIR, the sample continues from there, bit for bit as if it had never stopped.
 * Without TOKENIZER the text is read as bytes (token = byte, vocabulary 256); with one (a
 * tokenizer.json or a folder of GPT-2 or Hugging Face files) it is encoded into the tokenizer's
 * ids, which the model's vocabulary must cover. A DATA_FILE ending in .jsonl (with a TOKENIZER)
 * holds one example a line, {"text"},
 * {"prompt", "completion"} or chat {"messages"} rendered with the tokenizer folder's chat
 * template: each is one row, trained only on its completion or assistant tokens. With --pack
 * several short examples share a row (first fit; each attends only to itself, its positions
 * start at 0), so a step trains more targets and less padding: the session is created with
 * params.packed and steps with each token's position (remat_session_step_packed). A resumed run
 * packs as its state says. After training it prints the model's greedy continuation of the
 * text's (or first example's) first tokens. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <remat/remat.h>

/* Prints a failed call's message the way the remat command line does, and says which call. */
static int failed(remat_status status, const char* call) {
  if (status == REMAT_OK) return 0;
  fprintf(stderr, "finetune: error: %s: %s (%s)\n", call, remat_last_error(),
          remat_status_name(status));
  return 1;
}

/* Progress of long calls: weights written ("init"), pipelines built ("compile"), weights loaded
 * or saved. An app would move a progress bar; this one reports each phase as it completes. */
static int on_progress(void* user, const char* phase, uint64_t done, uint64_t total) {
  (void)user;
  if (done == total)
    fprintf(stderr, "%s: %llu/%llu done\n", phase, (unsigned long long)done,
            (unsigned long long)total);
  return 0; /* nonzero would cancel the call (REMAT_ERROR_CANCELLED) */
}

/* The bytes of the regular file `path`, or NULL. A device or FIFO is refused before fopen(): a
 * FIFO's open blocks until a writer comes, and /dev/zero never ends. */
static unsigned char* read_all(const char* path, size_t* size) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return NULL;
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char* data = NULL;
  size_t used = 0, capacity = 0, n = 0;
  int bad = 0;
  do {
    if (used == capacity) {
      capacity = capacity ? 2 * capacity : 1 << 16;
      unsigned char* grown = realloc(data, capacity);
      bad = grown == NULL;
      if (bad) break;
      data = grown;
    }
    n = fread(data + used, 1, capacity - used, f);
    used += n;
  } while (n > 0);
  bad = bad || ferror(f) || used == 0;
  fclose(f);
  if (bad) {
    free(data);
    return NULL;
  }
  *size = used;
  return data;
}

/* Row b of step s is the window of seq+1 tokens at ((s*batch + b)*seq) mod (len - seq - 1):
 * inputs are its first seq tokens, targets the next token of each (remat's token dataset). */
static void make_batch(const uint32_t* text, size_t len, int step, int batch, int seq,
                       uint32_t* tokens, uint32_t* targets) {
  for (int b = 0; b < batch; ++b) {
    const size_t start = ((size_t)step * batch + b) * seq % (len - seq - 1);
    for (int t = 0; t < seq; ++t) {
      tokens[b * seq + t] = text[start + t];
      targets[b * seq + t] = text[start + t + 1];
    }
  }
}

/* One step on batch s of `examples` (packed rows with their positions when the session packs),
 * or of windows over `text`. */
static int step(remat_session* session, const remat_session_params* params, const uint32_t* text,
                size_t len, const remat_examples* examples, int s, uint32_t* tokens,
                uint32_t* targets, uint32_t* positions, float* loss) {
  const size_t count = (size_t)params->batch * params->seq;
  if (examples && params->packed)
    return failed(remat_examples_batch_packed(examples, (uint64_t)s, params->batch, tokens, targets,
                                              positions),
                  "examples batch") ||
           failed(remat_session_step_packed(session, tokens, targets, positions, count, loss),
                  "step");
  if (examples &&
      failed(remat_examples_batch(examples, (uint64_t)s, params->batch, tokens, targets),
             "examples batch"))
    return 1;
  if (!examples) make_batch(text, len, s, params->batch, params->seq, tokens, targets);
  return failed(remat_session_step(session, tokens, targets, count, loss), "step");
}

/* Steps from the session's step count up to `steps`: the batch of step s is a function of s, so a
 * resumed session continues exactly where it stopped. With `examples` the rows are theirs, else
 * windows over `text`. */
static int train(remat_session* session, const remat_session_params* params, const uint32_t* text,
                 size_t len, const remat_examples* examples, int steps) {
  const size_t count = (size_t)params->batch * params->seq;
  uint32_t* tokens = malloc(count * sizeof *tokens);
  uint32_t* targets = malloc(count * sizeof *targets);
  uint32_t* positions = malloc(count * sizeof *positions);
  int bad = !tokens || !targets || !positions;
  if (bad) fprintf(stderr, "finetune: error: out of memory\n");
  float first = 0, loss = 0;
  uint64_t done = 0;
  bad = bad || failed(remat_session_steps_done(session, &done), "steps done");
  for (int s = (int)done; s < steps && !bad; ++s) {
    double lr = 0;
    bad = failed(remat_session_learning_rate(session, &lr), "learning rate") ||
          step(session, params, text, len, examples, s, tokens, targets, positions, &loss);
    if (!bad) printf("step %d loss %.4f lr %.3g\n", s + 1, loss, lr);
    if (s == (int)done) first = loss;
  }
  if (!bad) printf("loss %.4f -> %.4f\n", first, loss);
  free(tokens);
  free(targets);
  free(positions);
  return bad;
}

static void print_reports(const remat_session* session, uint64_t cap) {
  remat_plan_report plan = {.struct_size = sizeof plan};
  remat_memory_report memory = {.struct_size = sizeof memory};
  if (failed(remat_session_plan_report(session, &plan), "plan report") ||
      failed(remat_session_memory_report(session, &memory), "memory report"))
    return;
  printf(
      "plan: policy %s, %u checkpoints, arena %llu bytes (cap %llu), persistent %llu bytes, "
      "predicted step time x%.2f\n",
      plan.policy, plan.checkpoint_count, (unsigned long long)plan.arena_bytes,
      (unsigned long long)cap, (unsigned long long)plan.persistent_bytes,
      plan.predicted_step_ratio);
  printf("memory: planned %llu bytes, allocated %llu bytes, peak %llu bytes\n",
         (unsigned long long)memory.planned_total_bytes,
         (unsigned long long)memory.device_allocated_bytes,
         (unsigned long long)memory.device_peak_bytes);
}

/* Nonzero when every id of `tokenizer` is below the model's vocabulary; else prints why. */
static int tokenizer_fits(remat_tokenizer* tokenizer, int32_t vocab) {
  uint32_t tokenizer_vocab = 0;
  if (failed(remat_tokenizer_vocab_size(tokenizer, &tokenizer_vocab), "tokenizer vocabulary"))
    return 0;
  if (tokenizer_vocab > (uint32_t)vocab) {
    fprintf(stderr,
            "finetune: error: the tokenizer has %u token ids, the model's vocabulary only %d: "
            "use a checkpoint whose vocabulary covers the tokenizer\n",
            (unsigned)tokenizer_vocab, (int)vocab);
    return 0;
  }
  return 1;
}

/* How full the rows are, one example a row and packed: what --pack saves. */
static int print_packing(const remat_examples* examples) {
  remat_packing_report r = {.struct_size = sizeof r};
  if (failed(remat_examples_packing(examples, &r), "packing report")) return 1;
  printf(
      "rows: one example a row %llu (%.1f%% padding), packed %llu (%.1f%% padding); "
      "training on %s\n",
      (unsigned long long)r.plain_rows, 100.0 * r.plain_padding, (unsigned long long)r.packed_rows,
      100.0 * r.packed_padding, r.packed ? "packed rows" : "one example a row");
  return 0;
}

/* The fine-tuning rows of a JSONL file of examples (packed when params->packed), and the first
 * row's seq tokens (which the continuation after training starts from). NULL after printing
 * why. */
static uint32_t* read_examples(const char* path, const char* tokenizer_path,
                               remat_tokenizer* tokenizer, const remat_session_params* params,
                               remat_examples** examples, size_t* count) {
  uint64_t kept = 0, trained = 0;
  remat_examples_options options = {.struct_size = sizeof options};
  options.seq = params->seq;
  options.pack = params->packed;
  if (!tokenizer_fits(tokenizer, params->vocab) ||
      failed(remat_examples_load_with(path, tokenizer_path, &options, examples), path) ||
      failed(remat_examples_count(*examples, &kept, &trained), "examples count"))
    return NULL;
  printf("%llu examples, %llu trained targets\n", (unsigned long long)kept,
         (unsigned long long)trained);
  if (print_packing(*examples)) return NULL;
  uint32_t* tokens = malloc((size_t)params->seq * sizeof *tokens);
  uint32_t* targets = malloc((size_t)params->seq * sizeof *targets);
  if (!tokens || !targets) fprintf(stderr, "finetune: error: out of memory\n");
  if (!tokens || !targets ||
      failed(remat_examples_batch(*examples, 0, 1, tokens, targets), "examples batch")) {
    free(tokens);
    tokens = NULL;
  }
  free(targets);
  *count = (size_t)params->seq;
  return tokens;
}

/* Nonzero when `path` ends in ".jsonl". */
static int is_jsonl(const char* path) {
  const size_t n = strlen(path);
  return n >= 6 && strcmp(path + n - 6, ".jsonl") == 0;
}

/* The text's tokens: its bytes, or with a tokenizer its ids (asked for by size first, the C
 * API's idiom), each checked to be below the model's vocabulary. NULL after printing why. */
static uint32_t* tokenize(remat_tokenizer* tokenizer, const unsigned char* text, size_t len,
                          int32_t vocab, size_t* count) {
  if (!tokenizer) {
    uint32_t* tokens = malloc(len * sizeof *tokens);
    if (!tokens) fprintf(stderr, "finetune: error: out of memory\n");
    for (size_t i = 0; tokens && i < len; ++i) tokens[i] = text[i];
    *count = len;
    return tokens;
  }
  if (!tokenizer_fits(tokenizer, vocab)) return NULL;
  const char* chars = (const char*)text;
  if (failed(remat_tokenizer_encode(tokenizer, chars, len, 1, NULL, 0, count), "encode"))
    return NULL;
  uint32_t* tokens = malloc((*count ? *count : 1) * sizeof *tokens);
  if (!tokens) {
    fprintf(stderr, "finetune: error: out of memory\n");
    return NULL;
  }
  if (failed(remat_tokenizer_encode(tokenizer, chars, len, 1, tokens, *count, count), "encode")) {
    free(tokens);
    return NULL;
  }
  printf("%zu bytes -> %zu tokens\n", len, *count);
  return tokens;
}

/* The bytes `count` tokens stand for: through the tokenizer, or the tokens themselves as bytes. */
static int print_tokens(remat_tokenizer* tokenizer, const uint32_t* tokens, size_t count) {
  size_t bytes = count;
  if (tokenizer &&
      failed(remat_tokenizer_decode(tokenizer, tokens, count, NULL, 0, &bytes), "decode"))
    return 1;
  char* out = malloc(bytes ? bytes : 1);
  if (!out) {
    fprintf(stderr, "finetune: error: out of memory\n");
    return 1;
  }
  int bad = 0;
  if (tokenizer)
    bad = failed(remat_tokenizer_decode(tokenizer, tokens, count, out, bytes, &bytes), "decode");
  else
    for (size_t i = 0; i < count; ++i) out[i] = (char)tokens[i];
  if (!bad) fwrite(out, 1, bytes, stdout); /* raw bytes: decode output has no NUL */
  free(out);
  return bad;
}

/* The trained model's most likely continuation (temperature 0) of the text's first tokens. A
 * model's vocabulary may be larger than its tokenizer's (padded for speed): the continuation
 * stops before the first id the tokenizer cannot decode. */
static int continue_text(remat_session* session, remat_tokenizer* tokenizer, const uint32_t* text,
                         size_t len) {
  enum { kPrompt = 8, kGenerate = 24 };
  const size_t prompt = len < kPrompt ? len : kPrompt;
  uint32_t generated[kGenerate], known = 256;
  if (failed(remat_session_sample(session, text, prompt, kGenerate, 0, 0.0f, generated, kGenerate),
             "sample") ||
      (tokenizer && failed(remat_tokenizer_vocab_size(tokenizer, &known), "vocabulary")))
    return 1;
  size_t count = 0;
  while (count < kGenerate && generated[count] < known) ++count;
  printf("sample: [");
  int bad = print_tokens(tokenizer, text, prompt);
  printf("]");
  bad = bad || print_tokens(tokenizer, generated, count);
  printf("\n");
  return bad;
}

/* Nonzero when `dir` holds a training state to continue from. */
static int has_state(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/state.json", dir);
  struct stat st; /* stat, not fopen: a FIFO there would block; load_state refuses it */
  return stat(path, &st) == 0;
}

/* The model the params describe, as remat_session_params_from_file read it. */
static void print_model(const remat_session_params* p) {
  const int gemma3 = p->family == REMAT_FAMILY_GEMMA3;
  printf("model: %s, %d layers, dim %d, %d heads",
         gemma3                            ? "gemma3"
         : p->family == REMAT_FAMILY_LLAMA ? "llama"
                                           : "gpt2",
         p->layers, p->dim, p->heads);
  if (p->family == REMAT_FAMILY_LLAMA || gemma3)
    printf(" (%d kv), head_dim %d, mlp %d%s%s%s%s", p->kv_heads ? p->kv_heads : p->heads,
           p->head_dim ? p->head_dim : p->dim / p->heads, p->ffn ? p->ffn : 4 * p->dim,
           p->qk_norm ? ", q/k norms" : "", p->qkv_bias ? ", q/k/v biases" : "",
           p->rope_scaling == REMAT_ROPE_LLAMA3 ? ", llama3 rope scaling" : "",
           p->tied_head ? ", tied head" : "");
  if (gemma3)
    printf(", window %d, every %d-th layer global", p->sliding_window, p->sliding_window_pattern);
  printf(", vocabulary %d, context %d\n", p->vocab, p->ctx);
}

int main(int argc, char** argv) {
  const char* state = NULL;
  int stop_after = 0, pack = 0, first = 1;
  while (first + 1 < argc) {
    if (strcmp(argv[first], "--pack") == 0) {
      pack = 1;
      first += 1;
      continue;
    }
    if (strcmp(argv[first], "--state") == 0)
      state = argv[first + 1];
    else if (strcmp(argv[first], "--stop-after") == 0)
      stop_after = atoi(argv[first + 1]);
    else
      break;
    first += 2;
  }
  if ((argc - first != 5 && argc - first != 6) || (stop_after && !state)) {
    fprintf(stderr,
            "usage: %s [--state DIR [--stop-after K]] [--pack] WEIGHTS DATA_FILE ARENA_BYTES "
            "STEPS OUT [TOKENIZER]\n",
            argv[0]);
    return 2;
  }
  argv += first - 1;
  argc -= first - 1;
  const char *weights = argv[1], *data_file = argv[2], *out = argv[5];
  const uint64_t arena = strtoull(argv[3], NULL, 10);
  const int steps = atoi(argv[4]);
  if (arena == 0 || steps < 1 || stop_after < 0 || stop_after >= steps) {
    fprintf(stderr,
            "finetune: error: ARENA_BYTES and STEPS must be positive numbers, K below STEPS\n");
    return 2;
  }
  const int resume = state && has_state(state);
  if (remat_version() / 1000 != REMAT_VERSION / 1000) {
    fprintf(stderr, "finetune: error: built against remat %s, running with %u\n",
            REMAT_VERSION_STRING, (unsigned)remat_version());
    return 1;
  }

  /* 1. The model (shape and family) comes from the checkpoint; the cap makes the planner pick what
   * to recompute; a short fine-tune's AdamW settings and a cosine decay over the run. A resumed run
   * takes all of these from its state instead. */
  remat_session_params params;
  if (failed(remat_session_params_default(&params), "defaults")) return 1;
  if (resume) {
    if (failed(remat_session_params_from_state(&params, state), state)) return 1;
  } else {
    if (failed(remat_session_params_from_file(&params, weights), weights)) return 1;
    params.batch = 4;
    params.seq = params.ctx < 64 ? params.ctx : 64;
    params.arena_bytes = arena;
    params.learning_rate = 1e-3;
    params.weight_decay = 0.01;
    params.grad_clip = 1.0;
    params.lr_schedule = REMAT_LR_COSINE;
    params.warmup_steps = steps / 10;
    params.total_steps = steps;
    params.min_lr_ratio = 0.1;
    params.packed = pack;
  }
  params.progress = on_progress;
  print_model(&params);

  remat_tokenizer* tokenizer = NULL;
  if (argc == 7 && failed(remat_tokenizer_load(argv[6], &tokenizer), "load tokenizer")) return 1;
  remat_examples* examples = NULL;
  size_t len = 0;
  uint32_t* text = NULL;
  if (pack && !is_jsonl(data_file)) {
    fprintf(stderr, "finetune: error: --pack packs JSONL examples; %s is not a .jsonl file\n",
            data_file);
    remat_tokenizer_free(tokenizer);
    return 2;
  } else if (is_jsonl(data_file) && !tokenizer) {
    fprintf(stderr, "finetune: error: %s: JSONL examples need a TOKENIZER\n", data_file);
    return 2;
  } else if (is_jsonl(data_file)) {
    text = read_examples(data_file, argv[6], tokenizer, &params, &examples, &len);
  } else {
    size_t bytes = 0;
    unsigned char* data = read_all(data_file, &bytes);
    text = data ? tokenize(tokenizer, data, bytes, params.vocab, &len) : NULL;
    if (data && text && len < (size_t)params.seq + 2)
      fprintf(stderr, "finetune: error: %s: %zu tokens, training needs at least %d\n", data_file,
              len, params.seq + 2);
    else if (!data)
      fprintf(stderr, "finetune: error: %s: cannot read a non-empty regular file\n", data_file);
    free(data);
    if (text && len < (size_t)params.seq + 2) {
      free(text);
      text = NULL;
    }
  }
  if (!text) {
    remat_examples_free(examples);
    remat_tokenizer_free(tokenizer);
    return 1;
  }

  /* 2. Open the GPU (REMAT_DEVICE picks one), plan, allocate exactly, load the weights (or the
   *    state), train, save atomically. */
  remat_device* device = NULL;
  remat_session* session = NULL;
  int bad = failed(remat_device_open(NULL, &device), "open device") ||
            failed(remat_session_create(device, &params, &session), "create session") ||
            (resume ? failed(remat_session_load_state(session, state), state)
                    : failed(remat_session_load_file(session, weights), weights));
  const int until = stop_after ? stop_after : steps;
  if (!bad) {
    print_reports(session, arena);
    bad = train(session, &params, text, len, examples, until) ||
          (state && failed(remat_session_save_state(session, state), state));
    if (!bad && state) printf("state saved in %s at step %d of %d\n", state, until, steps);
    bad = bad || (until == steps && failed(remat_session_save_file(session, out), out));
  }
  if (!bad && until == steps) {
    print_reports(session, arena);
    printf("saved %s\n", out);
    bad = continue_text(session, tokenizer, text, len);
  }
  remat_session_free(session);
  remat_device_free(device);
  remat_examples_free(examples);
  remat_tokenizer_free(tokenizer);
  free(text);
  return bad ? 1 : 0;
}
