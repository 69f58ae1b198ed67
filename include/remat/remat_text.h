/* remat's C API, part two: tokenizers, chat templates and training rows. Included by
 * remat/remat.h (inside its extern "C" block, after the errors and sessions it refers to); include
 * remat/remat.h, not this file. Kept apart so that neither header passes ~600 lines. */
#ifndef REMAT_REMAT_TEXT_H
#define REMAT_REMAT_TEXT_H

#ifndef REMAT_REMAT_H
#error "include remat/remat.h, which includes remat/remat_text.h"
#endif

/* ---- text ------------------------------------------------------------------------------------ */

/* A BPE tokenizer: text bytes to token ids and back. Byte-level (GPT-2 style) exactly
 * (decode(encode(x)) == x for any bytes, where the vocabulary has a token for every byte; a GGUF
 * vocabulary without one leaves that byte out, as llama.cpp does); a tokenizer.json with byte
 * fallback (Gemma, Llama 2) decodes through its decoder. One tokenizer may be used from
 * several threads; its calls are serialised. */
typedef struct remat_tokenizer remat_tokenizer;

/* Loads a tokenizer from a Hugging Face tokenizer.json (byte-level BPE, or BPE with byte
 * fallback), a folder holding tokenizer.json, vocab.json + merges.txt or GPT-2's encoder.json +
 * vocab.bpe, or a GGUF model file (*.gguf: its byte-level BPE or SentencePiece tokenizer, read as
 * llama.cpp reads it; its user-defined tokens are matched even with allow_special 0): the same
 * files `remat tokenize --tokenizer PATH` reads. REMAT_ERROR_IO when `path` does not exist;
 * REMAT_ERROR_INVALID_ARGUMENT naming the file when its contents are malformed or a kind of
 * tokenizer remat does not support. Free with remat_tokenizer_free. */
REMAT_API remat_status remat_tokenizer_load(const char* path, remat_tokenizer** tokenizer);
/* NULL is ignored. */
REMAT_API void remat_tokenizer_free(remat_tokenizer* tokenizer);
/* One more than the largest token id: the vocabulary a model needs for this tokenizer's ids. */
REMAT_API remat_status remat_tokenizer_vocab_size(const remat_tokenizer* tokenizer,
                                                  uint32_t* vocab_size);

/* Encodes `bytes` bytes of `text` (any bytes, not NUL-terminated; invalid UTF-8 is encoded byte
 * by byte). With allow_special nonzero, special-token text such as "<|endoftext|>" becomes its id;
 * with 0 it is encoded as ordinary text. *count always receives the number of ids the text
 * encodes to. Ask for it first with ids = NULL and capacity = 0 (REMAT_OK, nothing written), then
 * call again with room for *count ids. When capacity is below *count the call writes no id and
 * returns REMAT_ERROR_INVALID_ARGUMENT (with *count set). */
REMAT_API remat_status remat_tokenizer_encode(remat_tokenizer* tokenizer, const char* text,
                                              size_t bytes, int allow_special, uint32_t* ids,
                                              size_t capacity, size_t* count);
/* Decodes `count` ids into the bytes they encode: raw bytes, possibly not valid UTF-8 on their own
 * (a character split across ids) and NOT NUL-terminated. *bytes always receives the byte count.
 * The same two-call idiom: out = NULL and capacity = 0 asks for the size; a capacity below it
 * writes nothing and returns REMAT_ERROR_INVALID_ARGUMENT. An id that is no token is
 * REMAT_ERROR_INVALID_ARGUMENT naming its position. */
REMAT_API remat_status remat_tokenizer_decode(const remat_tokenizer* tokenizer, const uint32_t* ids,
                                              size_t count, char* out, size_t capacity,
                                              size_t* bytes);

/* Rows to train on: fine-tuning examples (below), or since 0.4 windows of a token stream
 * (remat_examples_load_text, further down).
 * Fine-tuning rows built from a JSONL file of examples, one per line: {"text"}, {"prompt",
 * "completion"} or {"messages"} (chat, rendered with the tokenizer's chat template). Each kept
 * example fills one row of `seq` positions: cut to its first seq+1 tokens or padded with id 0;
 * only the tokens an example trains on (completions, assistant turns) have targets, every other
 * target is REMAT_IGNORE_TARGET. The rows are exactly those `remat finetune` trains on. */
typedef struct remat_examples remat_examples;

/* Reads and encodes `jsonl_path` with the tokenizer at `tokenizer_path` (what remat_tokenizer_load
 * takes). The chat template, bos_token and eos_token come from tokenizer_config.json next to the
 * tokenizer, or from a GGUF file's tokenizer.chat_template and bos and eos tokens; a Jinja file
 * `chat_template_path_or_null` replaces the template. REMAT_ERROR_IO when
 * a path does not exist; REMAT_ERROR_INVALID_ARGUMENT naming the file and `line N` for a malformed
 * line, and when no example keeps a trained target. Free with remat_examples_free. */
REMAT_API remat_status remat_examples_load(const char* jsonl_path, const char* tokenizer_path,
                                           const char* chat_template_path_or_null, int32_t seq,
                                           remat_examples** examples);
/* NULL is ignored. */
REMAT_API void remat_examples_free(remat_examples* examples);
/* The examples kept (those with a trained target after cutting) and their trained targets. */
REMAT_API remat_status remat_examples_count(const remat_examples* examples, uint64_t* kept,
                                            uint64_t* trained_targets);
/* Rows index*batch .. index*batch + batch - 1 (row k is kept example k mod count, so a resumed
 * run needs only its step count) into `tokens` and `targets`, batch*seq ids each. */
REMAT_API remat_status remat_examples_batch(const remat_examples* examples, uint64_t index,
                                            int32_t batch, uint32_t* tokens, uint32_t* targets);

/* Since 0.4: how remat_examples_load_with reads a file. */
typedef struct remat_examples_options {
  size_t struct_size;             /* sizeof(remat_examples_options) */
  int32_t seq;                    /* positions per row (at least 1) */
  const char* chat_template_path; /* a Jinja file replacing the tokenizer's template, or NULL */
  /* Nonzero: several examples to a row. One pass over the examples, in file order, puts each
   * in the first row of that pass with room left (first fit), else a new row; a row never takes
   * examples of two passes, so each pass trains each example once, and row k is the same
   * however the rows before it were read (a resumed run needs only its step count). An example
   * of L tokens fills L - 1 positions (its last token is only a target), one cut to seq + 1
   * tokens a whole row; padding after a row's last example has ignored targets. */
  int32_t pack;
} remat_examples_options;

/* remat_examples_load with options: `options->pack` packs the rows (train them on a session
 * created with params->packed). */
REMAT_API remat_status remat_examples_load_with(const char* jsonl_path, const char* tokenizer_path,
                                                const remat_examples_options* options,
                                                remat_examples** examples);
/* Packed examples: rows index*batch .. index*batch + batch - 1 with each token's position in its
 * example (0 where an example or the padding starts), batch*seq ids in each array, for
 * remat_session_step_packed. Unpacked examples write positions 0 .. seq-1 in every row. */
REMAT_API remat_status remat_examples_batch_packed(const remat_examples* examples, uint64_t index,
                                                   int32_t batch, uint32_t* tokens,
                                                   uint32_t* targets, uint32_t* positions);

/* Since 0.4: how full one pass over the examples' rows is, one example a row and packed. */
typedef struct remat_packing_report {
  size_t struct_size;    /* set to sizeof(remat_packing_report) before the call */
  uint64_t examples;     /* kept examples */
  uint64_t filled;       /* positions holding an example's input: L - 1 per example */
  uint64_t plain_rows;   /* rows one example a row: the kept examples */
  uint64_t packed_rows;  /* rows packed (the first pass) */
  double plain_padding;  /* fraction of positions that are padding, one example a row */
  double packed_padding; /* the same, packed */
  int32_t packed;        /* whether remat_examples_batch* reads packed rows */
} remat_packing_report;

REMAT_API remat_status remat_examples_packing(const remat_examples* examples,
                                              remat_packing_report* report);

/* Since 0.4: rows that are windows of one token stream, read and batched exactly as `remat train
 * --data FILE` reads a text, a file's bytes or an llm.c token file. Row b of batch `index`
 * (remat_examples_batch) is the window of seq + 1 tokens starting at token
 * ((index * batch + b) * seq) mod (n - seq - 1) of the stream's n tokens: its first seq tokens
 * are the inputs, its last seq the targets, every target trained. The same handle as examples:
 * remat_examples_batch_packed writes positions 0 .. seq-1; remat_examples_count and
 * remat_examples_packing, which count examples, refuse it; remat_examples_report describes
 * either. */
typedef enum remat_data_format {
  REMAT_DATA_AUTO = 0,  /* an llm.c token file by its magic number, else text: encoded with the
                         * tokenizer when one is given, else its bytes */
  REMAT_DATA_BYTES = 1, /* the file's bytes are the tokens (a vocabulary of 256): no tokenizer */
  REMAT_DATA_TEXT = 2,  /* text encoded with the tokenizer, which it needs */
  REMAT_DATA_LLMC = 3   /* an llm.c token file (what `remat tokenize --out` writes) */
} remat_data_format;

typedef struct remat_text_options {
  size_t struct_size;         /* sizeof(remat_text_options) */
  int32_t seq;                /* tokens per row (at least 1) */
  int32_t format;             /* a remat_data_format value */
  const char* tokenizer_path; /* what remat_tokenizer_load takes, or NULL */
  uint32_t vocab;             /* the model's vocabulary: every id must be below it */
} remat_text_options;

/* Reads `path` as `options` say. REMAT_ERROR_IO when a path does not exist;
 * REMAT_ERROR_INVALID_ARGUMENT with a line naming the file when it is no regular file (a device,
 * a FIFO), holds fewer than seq + 2 tokens (an empty file among them) or is malformed for its
 * format, when an id is not below options->vocab (naming the first), when the tokenizer has more
 * ids than vocab or bytes need more than it (256), and for a .jsonl file (its examples are
 * remat_examples_load_with's). On failure *rows is NULL. Free with remat_examples_free. */
REMAT_API remat_status remat_examples_load_text(const char* path, const remat_text_options* options,
                                                remat_examples** rows);

/* Since 0.4: what rows hold (remat_rows_report.kind). */
typedef enum remat_rows_kind {
  REMAT_ROWS_BYTES = 0,   /* windows of a file's bytes */
  REMAT_ROWS_TOKENS = 1,  /* windows of a token stream */
  REMAT_ROWS_EXAMPLES = 2 /* fine-tuning examples (remat_examples_load, _load_with) */
} remat_rows_kind;

/* Since 0.4: what `remat train` reports about its data. */
typedef struct remat_rows_report {
  size_t struct_size;       /* set to sizeof(remat_rows_report) before the call */
  int32_t kind;             /* a remat_rows_kind value */
  uint64_t tokens;          /* a stream's tokens (bytes); 0 for examples */
  uint64_t examples;        /* kept examples; 0 for a stream */
  uint64_t trained_targets; /* the examples' trained targets, once each; 0 for a stream */
  double unigram_entropy;   /* nats per target (the trained ones): the loss a model that ignores
                             * context reaches */
} remat_rows_report;

REMAT_API remat_status remat_examples_report(const remat_examples* rows, remat_rows_report* report);

#endif /* REMAT_REMAT_TEXT_H */
