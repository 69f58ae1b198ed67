/* remat: train GPT-style transformers on any Vulkan GPU under a fixed activation arena.
 *
 * The C API (C99) that apps link against. Every object is an opaque handle; nothing here needs
 * Vulkan or C++ headers. Every call that can fail returns a remat_status and, on failure, leaves a
 * one-line message in remat_last_error() (per thread). No call aborts or throws on bad input.
 * docs/api.md describes ownership, threading and the compatibility promise.
 */
#ifndef REMAT_REMAT_H
#define REMAT_REMAT_H

#include <stddef.h>
#include <stdint.h>

#include "remat/version.h"

#if defined(__GNUC__) || defined(__clang__)
#define REMAT_API __attribute__((visibility("default")))
#else
#define REMAT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ---------------------------------------------------------------------------------- */

typedef enum remat_status {
  REMAT_OK = 0,
  REMAT_ERROR_INVALID_ARGUMENT = 1, /* bad handle, pointer, size, shape, file contents, budget */
  REMAT_ERROR_OUT_OF_MEMORY = 2,    /* host or device memory exhausted */
  REMAT_ERROR_DEVICE = 3,           /* no Vulkan driver, device lost, a failed Vulkan call */
  REMAT_ERROR_IO = 4,               /* a file could not be opened, read or written */
  REMAT_ERROR_CANCELLED = 5,        /* the progress callback asked to stop */
  REMAT_ERROR_INTERNAL = 6          /* a bug in remat: please report the message */
} remat_status;

/* The message of the last call on this thread that failed ("" if it succeeded): the line the
 * `remat` command line prints after "remat: error: ". Valid until this thread's next remat call. */
REMAT_API const char* remat_last_error(void);
/* "REMAT_OK", "REMAT_ERROR_DEVICE", ...; "unknown status" for other values. Never NULL. */
REMAT_API const char* remat_status_name(remat_status status);
/* REMAT_VERSION of the library actually linked (compare with the header's REMAT_VERSION). */
REMAT_API uint32_t remat_version(void);

/* ---- devices --------------------------------------------------------------------------------- */

typedef struct remat_device remat_device;

typedef enum remat_device_type {
  REMAT_DEVICE_TYPE_OTHER = 0,
  REMAT_DEVICE_TYPE_DISCRETE = 1,
  REMAT_DEVICE_TYPE_INTEGRATED = 2,
  REMAT_DEVICE_TYPE_VIRTUAL = 3,
  REMAT_DEVICE_TYPE_CPU = 4
} remat_device_type;

typedef struct remat_device_info {
  size_t struct_size;     /* set to sizeof(remat_device_info) before the call */
  uint32_t index;         /* position in Vulkan's enumeration order (a selector for open) */
  remat_device_type type; /* discrete, integrated, ... */
  uint64_t memory_bytes;  /* device-local heap bytes */
  char name[256];         /* e.g. "llvmpipe (LLVM 15.0.6, 256 bits)", NUL-terminated */
} remat_device_info;

/* Vulkan devices remat can see. REMAT_ERROR_DEVICE when there is no loader or driver. */
REMAT_API remat_status remat_device_count(uint32_t* count);
REMAT_API remat_status remat_device_get_info(uint32_t index, remat_device_info* info);

/* Opens a device: `selector` is an index ("1") or a case-insensitive name substring
 * ("llvmpipe"); NULL or "" uses the REMAT_DEVICE environment variable, else the first discrete
 * GPU, then integrated, virtual, CPU. Free with remat_device_free. With REMAT_DEVICE_PROFILE=NAME
 * in the environment, this function, remat_device_wrap and remat_device_get_info see every device
 * within that device profile's limits (docs/device-profiles.md); an unknown NAME is
 * REMAT_ERROR_INVALID_ARGUMENT naming the known ones. */
REMAT_API remat_status remat_device_open(const char* selector, remat_device** device);

/* Vulkan objects an app already owns, for remat to run on (Vulkan 1.1 or later). Each handle is
 * the app's VkInstance, VkPhysicalDevice, VkDevice and VkQueue cast to void*;
 * get_instance_proc_addr is its PFN_vkGetInstanceProcAddr cast to void*. The queue must support
 * compute and belong to queue_family_index. remat never destroys them; they must outlive the
 * remat_device and all its sessions, and the app must not use the queue while a remat call on
 * this device runs. */
typedef struct remat_vulkan_handles {
  size_t struct_size; /* set to sizeof(remat_vulkan_handles) */
  void* get_instance_proc_addr;
  void* instance;
  void* physical_device;
  void* device;
  void* queue;
  uint32_t queue_family_index;
} remat_vulkan_handles;

REMAT_API remat_status remat_device_wrap(const remat_vulkan_handles* handles,
                                         remat_device** device);
/* NULL is ignored. Sessions created on the device keep it alive until they are freed. */
REMAT_API void remat_device_free(remat_device* device);

/* ---- session parameters ---------------------------------------------------------------------- */

/* Called during long calls with a phase, work done and total work: "init" (remat_session_create
 * writing initial weights, in bytes), "compile" (create building pipelines, in pipelines), "load"
 * (remat_session_load_*, bytes checked then uploaded) and "save" (bytes written); done == total
 * ends a phase. Return nonzero to cancel: the call fails with REMAT_ERROR_CANCELLED. A cancelled
 * create returns no session; a cancelled save leaves any previous file in place; a load cancelled
 * while checking the file leaves the session as it was, during the upload it leaves the session
 * with a fresh session's initial weights. The session stays usable either way. */
typedef int (*remat_progress_fn)(void* user, const char* phase, uint64_t done, uint64_t total);

/* Learning-rate schedules as Hugging Face transformers defines them, over the run's
 * total_steps updates with learning_rate as the peak; update s (counted from 0) uses
 *   s < warmup_steps:  learning_rate * s / warmup_steps
 *   CONSTANT:          learning_rate
 *   LINEAR:            learning_rate * (total_steps - s) / (total_steps - warmup_steps)
 *   COSINE:            learning_rate * (m + (1 - m) * (1 + cos(pi * p)) / 2), m = min_lr_ratio,
 *                      p = (s - warmup_steps) / (total_steps - warmup_steps)
 * (no lower than 0 after total_steps). */
typedef enum remat_lr_schedule {
  REMAT_LR_CONSTANT = 0,
  REMAT_LR_LINEAR = 1,
  REMAT_LR_COSINE = 2
} remat_lr_schedule;

/* remat_session_params.loss_chunk: chosen when the session plans (the default). */
#define REMAT_LOSS_CHUNK_AUTO (-1)

/* Storage types (remat_session_params.weights_dtype). */
typedef enum remat_dtype {
  REMAT_DTYPE_F32 = 0,
  REMAT_DTYPE_F16 = 1,
  REMAT_DTYPE_BF16 = 2
} remat_dtype;

typedef struct remat_session_params {
  size_t struct_size; /* sizeof(remat_session_params); set by remat_session_params_default */

  /* The model: a preset ("tiny", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", or of the
   * Llama family "llama-tiny", "smollm2-135m", "smollm2-360m", "qwen2.5-0.5b", "llama3.2-1b",
   * "llama3.2-3b", "qwen3-0.6b", "qwen3-1.7b", Gemma 3 "gemma3-270m", "gemma3-1b", and
   * Qwen3.5 "qwen3.5-0.8b", "qwen3.5-2b", "qwen3.5-tiny") or NULL;
   * each
   * nonzero field below overrides the preset's value (with NULL all five must be set, and the
   * model is GPT-2 unless `family` below says otherwise). */
  const char* model;
  int32_t layers, dim, heads, vocab, ctx;

  int32_t batch; /* sequences per micro-batch (default 4) */
  int32_t seq;   /* tokens per sequence, at most ctx (default 64) */
  int32_t accum; /* micro-batches per optimizer step (default 1) */

  /* "none", "every:K", "sqrt", "selective" or "auto"; NULL: "auto" when arena_bytes is set, else
   * "none". */
  const char* policy;
  uint64_t arena_bytes; /* activation arena cap in bytes; 0 = no cap */

  /* AdamW: defaults 1e-3, 0.9, 0.999, 1e-8, weight decay 0.01, no gradient clipping (0). */
  double learning_rate, beta1, beta2, eps, weight_decay;
  double grad_clip;

  uint64_t seed; /* weight initialisation and dropout masks (default 0) */

  /* Where compiled pipelines are cached between runs: NULL = the default folder ($REMAT_CACHE_DIR,
   * else $XDG_CACHE_HOME/remat, else ~/.cache/remat), "" = no cache file, else this folder. */
  const char* pipeline_cache_dir;

  remat_progress_fn progress; /* NULL: no progress reports, no cancellation */
  void* progress_user;        /* passed back to progress */

  /* Since 0.3: the learning-rate schedule remat_session_step follows (default CONSTANT with no
   * warmup: learning_rate throughout). LINEAR and COSINE need total_steps >= 1 and warmup_steps
   * in [0, total_steps]; min_lr_ratio in [0, 1] is read by COSINE only. lr_schedule holds a
   * remat_lr_schedule value in a fixed-size integer, so that any value an app passes is read
   * safely (and refused unless it is one of the three). */
  int32_t lr_schedule;
  int64_t warmup_steps;
  int64_t total_steps;
  double min_lr_ratio;

  /* LoRA in PEFT's layout: lora_rank > 0 trains rank-R adapters (y = x W + b + (alpha/R) x A^T
   * B^T) on a frozen model, whose weights load_file loads and save_file saves unchanged. Since 0.3;
   * a struct that ends before them (struct_size = offsetof(remat_session_params, lora_rank)) is
   * read as full fine-tuning. */
  int32_t lora_rank;        /* R; 0 = full fine-tuning (default) */
  double lora_alpha;        /* the adapters are scaled by lora_alpha / R; 0 = 2R */
  const char* lora_targets; /* comma-separated module names matched against the end of each
                             * weight's path, as PEFT's target_modules; NULL = the model's
                             * projections (docs/cli.md, --lora-targets) */

  /* Since 0.4: rows of [rows, vocab] logits the LM head and loss hold at a time: 0 = all
   * batch x seq rows; a positive multiple of 64 = chunks of that many rows (or any value of at
   * least batch x seq: one chunk), which saves most of the arena at large vocabularies and costs
   * one more head matmul in the backward; REMAT_LOSS_CHUNK_AUTO (-1, the default) = the whole
   * logits where they fit, else the largest multiple of 64 rows that does. "Fit": the f32 logits
   * within one storage-buffer binding (the device's maxStorageBufferRange; remat_plan assumes
   * Vulkan's smallest, 128 MiB), and with arena_bytes under the auto policy the smallest plan
   * within it; with memory_bytes it is chosen together with the rest of the plan. Logits that
   * fit keep every result of a session that ran with 0. Results do not depend on it but for
   * rounding in the head's weight gradient; with LoRA (a frozen head) not even that. A chunked
   * session cannot sample (remat_session_sample needs whole logits: set 0). A struct that ends
   * before it (struct_size = offsetof(remat_session_params, loss_chunk)) is read as auto. */
  int32_t loss_chunk;
  /* Since 0.4: a cap on the session's whole device memory (persistent weights, gradients, AdamW
   * moments, the activation arena and the session's fixed buffers); 0 = no cap. The planner
   * subtracts what the model and shape fix and plans activations into the rest ("auto" when
   * policy is NULL; arena_bytes, if set, is checked as well). Too small is
   * REMAT_ERROR_INVALID_ARGUMENT whose message names the smallest total that plans. A struct
   * that ends before it (struct_size = offsetof(remat_session_params, memory_bytes)) has none. */
  uint64_t memory_bytes;
  /* Since 0.4: the storage of the frozen weights under LoRA, a remat_dtype value (default F32).
   * F16 or BF16 halves their bytes (linear weights and embeddings; 1-D norm gains and biases stay
   * F32) and needs lora_rank > 0 and a device with 16-bit storage buffer access. A struct that
   * ends before it (struct_size = offsetof(remat_session_params, weights_dtype)) is read as F32. */
  int32_t weights_dtype;
  /* Since 0.4: how activations are stored, a remat_dtype value (default F32). F16 or BF16 stores
   * every saved or recomputed activation in 16 bits, rounded to nearest even when written and
   * widened when read; compute, gradients, norm statistics, losses, trainable weights and AdamW
   * moments stay F32. Needs a device with 16-bit storage buffer access. A struct that ends before
   * it (struct_size = offsetof(remat_session_params, act_dtype)) is read as F32. */
  int32_t act_dtype;
  /* Since 0.4: nonzero = packed rows, several examples to a row (remat_examples_options.pack):
   * every step then also takes each token's position in its example
   * (remat_session_step_packed), attention stays within an example and positions restart at 0
   * for each. A struct that ends before it (struct_size = offsetof(remat_session_params,
   * packed)) is read as 0. */
  int32_t packed;
  /* Since 0.4: a quantized .gguf model file whose matrices the session keeps in their ggml blocks
   * (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K ... Q6_K) on the device, decoded by the kernels where they
   * read them (QLoRA): no float copy of them exists; the plan and memory_bytes count their block
   * bytes. Needs lora_rank > 0 (without it the field is not read, unless base_blocks is
   * REMAT_BASE_BLOCKS_KEEP) and F32 activations; the model fields must describe the file's
   * model, and the session then loads that file (remat_session_load_file). base_blocks (below)
   * chooses whether a LoRA session keeps the blocks: by default it does. NULL (default): every
   * frozen weight is stored as weights_dtype. remat_session_params_from_file sets it to the .gguf
   * file it reads (pointing to a copy of the path that remat keeps until the process ends), so
   * that LoRA on that file keeps its blocks as `remat train --init M.gguf --lora R` does, and to
   * NULL for any other checkpoint, as remat_session_params_from_memory does. A struct that ends
   * before it (struct_size = offsetof(remat_session_params, quantized_base)) has none. */
  const char* quantized_base;

  /* Since 0.4: the model's family, so that any model remat trains can be described here (what
   * remat_session_params_from_file fills in for a checkpoint). family holds a remat_family value.
   * REMAT_FAMILY_PRESET (0, the default): the family comes from the preset named by `model`
   * (GPT-2 when `model` is NULL) and every field below must be 0. REMAT_FAMILY_GPT2: GPT-2, every
   * field below 0. REMAT_FAMILY_LLAMA: the Llama family (Llama, SmolLM2, Qwen2, Llama 3.x,
   * Qwen3) exactly as the fields below say, whatever the preset's were; they follow transformers'
   * config.json keys. REMAT_FAMILY_GEMMA3 and REMAT_FAMILY_QWEN35 read them too, and their own
   * fields further below. A struct that ends before family (struct_size = offsetof(
   * remat_session_params, family)) is read as REMAT_FAMILY_PRESET. */
  int32_t family;
  int32_t kv_heads;  /* num_key_value_heads; divides heads; 0 = heads */
  int32_t ffn;       /* intermediate_size, the SwiGLU MLP's width; 0 = 4 x dim */
  int32_t head_dim;  /* head_dim when not dim / heads (Qwen3); 0 = dim / heads */
  double rope_theta; /* RoPE base; 0 = 10000 */
  double norm_eps;   /* rms_norm_eps; 0 = 1e-5 */
  int32_t tied_head; /* nonzero: lm_head is the token embedding (tie_word_embeddings) */
  int32_t qkv_bias;  /* nonzero: q/k/v projections have biases (Qwen2's attention_bias) */
  int32_t qk_norm;   /* nonzero: RMSNorm over each head of q and k (Qwen3's q_norm, k_norm) */
  /* rope_scaling: a remat_rope_scaling value; REMAT_ROPE_LLAMA3 (Llama 3.1+'s rope_type llama3)
   * reads the four fields after it, REMAT_ROPE_NONE needs them 0. */
  int32_t rope_scaling;
  double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
  int32_t rope_original_ctx; /* original_max_position_embeddings */

  /* Since 0.4: Gemma 3 (family REMAT_FAMILY_GEMMA3, model_type gemma3_text), whose other fields
   * are the Llama family's above (q/k norms and a tied head are implied; qkv_bias must be 0 and
   * rope_scaling REMAT_ROPE_NONE or REMAT_ROPE_LINEAR with rope_factor). Every field here must be 0
   * for any other family. A struct that ends before sliding_window (struct_size =
   * offsetof(remat_session_params, sliding_window)) cannot describe Gemma 3. */
  int32_t sliding_window;         /* local layers' window: query t sees keys t - window + 1 .. t */
  int32_t sliding_window_pattern; /* layer i is global (all keys) iff (i + 1) % pattern == 0 */
  double rope_local_theta;        /* rope_local_base_freq, local layers' RoPE base; 0 = 10000 */
  double query_pre_attn_scalar;   /* scores scaled by its -1/2 power; 0 = the head size */

  /* Since 0.4: the keys of the config.json remat_session_save_file writes into a folder (and of
   * the config text in a Llama-family .safetensors file's metadata), a remat_config_keys value:
   * REMAT_CONFIG_KEYS_TRANSFORMERS4 (0, the default: rope_theta, rope_scaling, torch_dtype) or
   * REMAT_CONFIG_KEYS_TRANSFORMERS5 (rope_parameters, dtype). remat_session_params_from_file sets
   * it to the keys a folder's config.json has, so a folder is saved as it was read. It changes
   * nothing a session computes. A struct that ends before it (struct_size =
   * offsetof(remat_session_params, config_keys)) saves transformers 4's keys. */
  int32_t config_keys;

  /* Since 0.4: whether a LoRA session keeps quantized_base's matrices in their ggml blocks, a
   * remat_base_blocks value; the same decision, with the same default, as `remat train` and
   * `remat plan` make for --lora on a .gguf --init. REMAT_BASE_BLOCKS_AUTO (0, the default): kept
   * when lora_rank > 0 and quantized_base is set; without LoRA quantized_base is not read (full
   * fine-tuning trains every weight in F32). REMAT_BASE_BLOCKS_KEEP (`--base-blocks yes`): kept,
   * and both lora_rank > 0 and quantized_base are required. REMAT_BASE_BLOCKS_DECODE
   * (`--base-blocks no`): every frozen weight is decoded to weights_dtype, as with quantized_base
   * NULL; it needs lora_rank > 0 and quantized_base too. A struct that ends before it
   * (struct_size = offsetof(remat_session_params, base_blocks)) is read as AUTO. */
  int32_t base_blocks;

  /* Since 0.4: nonzero: the session trains a preference objective (DPO, KTO) with
   * remat_session_step_preference. batch then counts examples (pairs, or labelled examples),
   * and each micro-batch runs 2 x batch rows: the chosen answers then the rejected ones, or the
   * labelled examples then their KL rows. A struct that ends before it (struct_size =
   * offsetof(remat_session_params, preference)) is read as 0. */
  int32_t preference;

  /* Since 0.4: Qwen3.5 (family REMAT_FAMILY_QWEN35, model_type qwen3_5_text or qwen3_5, llama.cpp's
   * qwen35), whose other fields are the Llama family's above: kv_heads, ffn, head_dim, rope_theta
   * and norm_eps of its gated full-attention layers, tied_head (q/k norms implied; qkv_bias and
   * the Gemma 3 fields 0, rope_scaling REMAT_ROPE_NONE). Its other layers (three of every four in
   * Qwen3.5's releases) are Gated DeltaNet linear attention, described by the fields below
   * (config.json's keys; the six sizes are required, positive); full_attention_interval ...
   * mrope_interleaved must be 0 for any other family. A struct that ends before
   * full_attention_interval (struct_size = offsetof(remat_session_params, full_attention_interval))
   * cannot describe Qwen3.5 (a preset name still can) and is read with delta_chunk
   * REMAT_DELTA_CHUNK_AUTO. */
  int32_t full_attention_interval; /* layer i is full attention iff (i + 1) % interval == 0 */
  int32_t linear_key_heads;        /* linear_num_key_heads */
  int32_t linear_value_heads;      /* linear_num_value_heads, a multiple of linear_key_heads */
  int32_t linear_key_head_dim;     /* linear_key_head_dim */
  int32_t linear_value_head_dim;   /* linear_value_head_dim */
  int32_t conv_kernel;             /* linear_conv_kernel_dim: the causal conv1d's taps */
  double partial_rotary_factor;    /* share of each head's channels RoPE rotates, in (0, 1] */
  int32_t mtp_layers; /* mtp_num_hidden_layers: kept in files, neither trained nor counted */
  /* rope mrope_section: how the rotated frequencies split between a multimodal position's three
   * parts (text gives all three the same position, so it changes nothing computed); all 0 =
   * {rotated channels / 2, 0, 0}. mrope_interleaved: nonzero as config.json's. */
  int32_t mrope_section[3];
  int32_t mrope_interleaved;
  /* Tokens per chunk of the Gated DeltaNet recurrence (`remat train --delta-chunk`): 0 = the
   * whole sequence in one chunk, N = chunks of N tokens (a multiple of 64, the chunkwise
   * kernels' block), REMAT_DELTA_CHUNK_AUTO (-1, the default)
   * = the length `remat plan` and `remat train` choose. Results are the same bits for every
   * value; only the plan (memory, recompute) differs. Positive values need a Qwen3.5 model. */
  int32_t delta_chunk;
} remat_session_params;

/* remat_session_params.delta_chunk: chosen when the session plans (the default). */
#define REMAT_DELTA_CHUNK_AUTO (-1)

/* remat_session_params.family */
typedef enum remat_family {
  REMAT_FAMILY_PRESET = 0,
  REMAT_FAMILY_GPT2 = 1,
  REMAT_FAMILY_LLAMA = 2,
  REMAT_FAMILY_GEMMA3 = 3,
  REMAT_FAMILY_QWEN35 = 4
} remat_family;

/* remat_session_params.rope_scaling. REMAT_ROPE_LINEAR (rope_type linear: every frequency divided
 * by rope_factor, the other three rope fields 0) is Gemma 3's, on its global layers only. */
typedef enum remat_rope_scaling {
  REMAT_ROPE_NONE = 0,
  REMAT_ROPE_LLAMA3 = 1,
  REMAT_ROPE_LINEAR = 2
} remat_rope_scaling;

/* remat_session_params.config_keys: which transformers' config.json keys a saved folder has. */
typedef enum remat_config_keys {
  REMAT_CONFIG_KEYS_TRANSFORMERS4 = 0,
  REMAT_CONFIG_KEYS_TRANSFORMERS5 = 1
} remat_config_keys;

/* remat_session_params.base_blocks */
typedef enum remat_base_blocks {
  REMAT_BASE_BLOCKS_AUTO = 0,
  REMAT_BASE_BLOCKS_KEEP = 1,
  REMAT_BASE_BLOCKS_DECODE = 2
} remat_base_blocks;

/* Fills *params with the defaults above (model "tiny"). */
REMAT_API remat_status remat_session_params_default(remat_session_params* params);
/* Sets the model fields (model = NULL; layers, dim, heads, vocab, ctx, family and the family's
 * fields, and config_keys) from a checkpoint, so that a session can load it: a Hugging Face model
 * folder (its config.json: model_type gpt2, llama, qwen2, qwen3, gemma3_text, qwen3_5 or
 * qwen3_5_text, in transformers 4's or 5's keys), a shard index, a .gguf model file (its
 * metadata), or a safetensors file (the model its metadata names as remat saves it, else the GPT-2
 * its tensors imply, heads from its metadata). It also sets quantized_base: the .gguf file, else
 * NULL (see there). The memory form reads `size` bytes of a safetensors image at `data` during
 * the call only, and sets quantized_base to NULL. */
REMAT_API remat_status remat_session_params_from_file(remat_session_params* params,
                                                      const char* path);
REMAT_API remat_status remat_session_params_from_memory(remat_session_params* params,
                                                        const void* data, size_t size);

/* ---- plans ----------------------------------------------------------------------------------- */

typedef struct remat_plan_report {
  size_t struct_size;               /* set to sizeof(remat_plan_report) before the call */
  uint64_t arena_bytes;             /* the activation arena the plan allocates */
  uint64_t arena_lower_bound_bytes; /* most bytes live at one step: no layout does better */
  uint64_t persistent_bytes;        /* parameters, gradients, AdamW moments, tokens, losses */
  uint64_t total_bytes;             /* arena + persistent */
  uint64_t parameter_count;         /* model parameters */
  uint32_t checkpoint_count;        /* blocks whose input is kept as a segment checkpoint */
  double predicted_step_ratio;      /* predicted step time / the same with no recompute (>= 1) */
  double recompute_ratio;           /* FLOPs recomputed / FLOPs of the first forward pass */
  char policy[64];                  /* the policy that produced it, e.g. "auto" */
  /* Since 0.4: tokens per chunk of the Gated DeltaNet recurrence the plan runs (the sequence
   * length when one chunk holds it), as params->delta_chunk gave or chose it: `remat plan
   * --json`'s delta_rule.chunk; 0 for a model without delta-rule layers. A struct that ends
   * before it (struct_size = offsetof(remat_plan_report, delta_chunk)) is filled without it. */
  int32_t delta_chunk;
} remat_plan_report;

/* Plans a training step without a device: what fits `arena_bytes`, at what cost. Offsets are
 * aligned to 256 bytes; a session aligns to its device (usually the same or smaller). */
REMAT_API remat_status remat_plan(const remat_session_params* params, remat_plan_report* report);

/* ---- sessions -------------------------------------------------------------------------------- */

typedef struct remat_session remat_session;

/* Plans, allocates exactly what the plan needs, initialises the weights from params->seed (as
 * transformers initialises the model's family) and records the step. A budget below the smallest
 * feasible plan is REMAT_ERROR_INVALID_ARGUMENT naming the minimum. params is read during the call
 * only. */
REMAT_API remat_status remat_session_create(remat_device* device,
                                            const remat_session_params* params,
                                            remat_session** session);
/* NULL is ignored. */
REMAT_API void remat_session_free(remat_session* session);

/* Loads parameters from a safetensors checkpoint, a shard index (model.safetensors.index.json) or a
 * Hugging Face model folder holding either (shapes must match the session's model)
 * and resets the optimizer state. Every value is checked before the first is uploaded, so a bad
 * checkpoint leaves the session as it was. The memory form reads the app's buffer in place,
 * during the call only (errors name it "weights in memory"). */
REMAT_API remat_status remat_session_load_file(remat_session* session, const char* path);
REMAT_API remat_status remat_session_load_memory(remat_session* session, const void* data,
                                                 size_t size);
/* Writes every parameter as F32 with Hugging Face names: to `path` itself when it ends in
 * ".safetensors", as a GGUF model llama.cpp loads when it ends in ".gguf" (GGUF tensor names and
 * layout, no tokenizer: tokenizer.ggml.model "none"), else into the folder `path` (created if
 * missing; its parent must exist) as a Hugging Face model, config.json and model.safetensors. Each
 * file is written atomically: a failed save leaves any previous file (or folder content) intact. */
REMAT_API remat_status remat_session_save_file(remat_session* session, const char* path);

/* LoRA sessions only (lora_rank > 0). save_adapter writes PEFT's adapter_model.safetensors and
 * adapter_config.json into `dir` (created if missing), each atomically; load_adapter reads them,
 * refusing a different rank, alpha or targets and what remat does not implement (DoRA, rsLoRA,
 * trained biases, LoRA dropout), and resets the optimizer state; save_merged writes the model's
 * weights with every adapter folded in (W + (alpha/R) (B A)^T) as a safetensors checkpoint. A
 * `dir` or `path` ending in ".gguf" is one file instead: a llama.cpp LoRA adapter (F32; llama.cpp's
 * tensor names, q/k rows of B permuted as the base model's) for save_adapter and load_adapter, an
 * F32 GGUF model for save_merged. */
REMAT_API remat_status remat_session_save_adapter(remat_session* session, const char* dir);
REMAT_API remat_status remat_session_load_adapter(remat_session* session, const char* dir);
REMAT_API remat_status remat_session_save_merged(remat_session* session, const char* path);

/* A target equal to this is not trained (prompt tokens, padding): its loss is 0, it adds no
 * gradient and it is not counted in the mean. The counterpart of PyTorch's ignore_index -100. */
#define REMAT_IGNORE_TARGET 0xFFFFFFFFu

/* One optimizer step on accum x batch x seq tokens and targets (row-major [accum*batch, seq],
 * each below vocab; a target may also be REMAT_IGNORE_TARGET); `count` is the length of both
 * arrays. *loss receives the mean loss over the trained targets of all accum micro-batches
 * together, each target weighing the same, and the step trains that mean's gradient. A step
 * whose targets are all REMAT_IGNORE_TARGET is REMAT_ERROR_INVALID_ARGUMENT; nothing runs. */
REMAT_API remat_status remat_session_step(remat_session* session, const uint32_t* tokens,
                                          const uint32_t* targets, size_t count, float* loss);
/* Since 0.4: remat_session_step for a session created with params->packed: `positions` holds
 * each token's position in its example, `count` ids like tokens and targets (what
 * remat_examples_batch_packed writes): each row starts at 0 and every id is 0 (a new example) or
 * its predecessor + 1, else REMAT_ERROR_INVALID_ARGUMENT naming the first bad index. A session
 * without packed rows refuses it, and a packed one refuses remat_session_step. */
REMAT_API remat_status remat_session_step_packed(remat_session* session, const uint32_t* tokens,
                                                 const uint32_t* targets, const uint32_t* positions,
                                                 size_t count, float* loss);
/* Since 0.4, preference tuning (params->preference; docs/api.md). DPO (Rafailov et al. 2023)
 * and KTO (Ethayarajh et al. 2024) as TRL's trainers define them. */
typedef enum remat_objective { REMAT_OBJECTIVE_DPO = 1, REMAT_OBJECTIVE_KTO = 2 } remat_objective;
typedef struct remat_preference_options {
  size_t struct_size;        /* sizeof(remat_preference_options); set by ..._default */
  int32_t objective;         /* remat_objective (default DPO) */
  double beta;               /* 0.1 */
  double label_smoothing;    /* DPO: conservative DPO's epsilon in [0, 0.5]; 0 */
  double desirable_weight;   /* KTO: 1 */
  double undesirable_weight; /* KTO: 1 */
} remat_preference_options;
REMAT_API remat_preference_options remat_preference_options_default(void);
/* TRL's logged metrics of one step (NaN where the step has none: KTO's kl for DPO, DPO's
 * accuracies for KTO, a KTO batch without undesirable examples' rewards_rejected). */
typedef struct remat_preference_metrics {
  size_t struct_size; /* set to sizeof(remat_preference_metrics) before the call */
  double loss;        /* the mean over the step's examples */
  double rewards_chosen, rewards_rejected, rewards_accuracies, rewards_margins;
  double logps_chosen, logps_rejected, kl;
} remat_preference_metrics;
/* Each row's log-prob, the sum of log p(target) over its trained targets (0 for a row that
 * trains none), without training: the forward pass with dropout off. tokens and targets hold
 * whole micro-batches of 2 x batch rows of seq ids (`count` each); out[count / seq]. Called on
 * the data before the first step it gives the reference model's log-probs (under LoRA the
 * adapters start at 0: the base; else the initial weights), which the app keeps. */
REMAT_API remat_status remat_session_log_probs(remat_session* session, const uint32_t* tokens,
                                               const uint32_t* targets, size_t count, double* out,
                                               size_t out_count);
/* One optimizer step of a preference objective on accum micro-batches of 2 x batch rows
 * (`count` tokens and targets): per micro-batch, DPO's batch chosen answers then the rejected
 * ones (pair b is rows b and batch + b), or KTO's labelled examples then their KL rows (an
 * example's prompt with another's answer, forward only). Only trained targets are scored, so
 * the targets mask each row to its answer. reference[count / seq]: each row's reference
 * log-prob (remat_session_log_probs before training); desirable[accum x batch]: KTO's labels
 * (nonzero: desirable), NULL for DPO. *metrics (optional) receives the loss and TRL's metrics. */
REMAT_API remat_status remat_session_step_preference(
    remat_session* session, const remat_preference_options* options, const uint32_t* tokens,
    const uint32_t* targets, size_t count, const double* reference, size_t reference_count,
    const uint8_t* desirable, size_t desirable_count, remat_preference_metrics* metrics);

/* Sets the learning rate: the schedule's peak (the rate itself under CONSTANT). */
REMAT_API remat_status remat_session_set_learning_rate(remat_session* session,
                                                       double learning_rate);
/* The rate the next remat_session_step uses (the schedule at the session's step count), and the
 * number of optimizer steps taken (restored by remat_session_load_state). */
REMAT_API remat_status remat_session_learning_rate(const remat_session* session,
                                                   double* learning_rate);
REMAT_API remat_status remat_session_steps_done(const remat_session* session, uint64_t* steps);

/* Training that survives being stopped. save_state writes everything needed to continue into the
 * folder `dir` (docs/training-state.md): the trained parameters, AdamW's moments, the step count
 * and the session's configuration (model, shape, dropout, accumulation, seed, policy, AdamW,
 * schedule). The folder is replaced whole or not at all: a failed or cancelled save (progress
 * phase "save") or a crash leaves the previous state. `dir` must be new, empty or hold a state.
 * load_state restores parameters, moments and the step count into a session created for the same
 * run, so that further steps give bit-identical results to a run never stopped: the same model,
 * trainable parameters, batch, seq, accum and seed (else REMAT_ERROR_INVALID_ARGUMENT naming the
 * difference; policy, arena, AdamW settings and schedule are the session's own). A damaged state
 * (bad JSON, a missing or truncated file, wrong shapes, a hash that does not match) is
 * REMAT_ERROR_INVALID_ARGUMENT and leaves the session as it was; progress phase "load".
 * params_from_state fills *params (model, shape, loss chunk, accum, seed, policy, arena, AdamW,
 * schedule) from a state, for creating the session that loads it; the other fields keep their
 * values. */
REMAT_API remat_status remat_session_save_state(remat_session* session, const char* dir);
REMAT_API remat_status remat_session_load_state(remat_session* session, const char* dir);
REMAT_API remat_status remat_session_params_from_state(remat_session_params* params,
                                                       const char* dir);

/* Generates `count` tokens after `prompt` (prompt_count >= 1, each below vocab) at
 * `temperature` (0: the most likely token), deterministically for a seed, into out[0..count).
 * A session whose loss is chunked (given, or chosen by auto) never holds a row's whole logits:
 * REMAT_ERROR_INVALID_ARGUMENT; sample from a session created with loss_chunk 0. */
REMAT_API remat_status remat_session_sample(remat_session* session, const uint32_t* prompt,
                                            size_t prompt_count, uint32_t count, uint64_t seed,
                                            float temperature, uint32_t* out, size_t out_capacity);

REMAT_API remat_status remat_session_plan_report(const remat_session* session,
                                                 remat_plan_report* report);

typedef struct remat_memory_report {
  size_t struct_size;              /* set to sizeof(remat_memory_report) before the call */
  uint64_t persistent_bytes;       /* planned: the persistent buffer */
  uint64_t arena_bytes;            /* planned: the activation arena */
  uint64_t extra_bytes;            /* planned: staging and scratch buffers */
  uint64_t planned_total_bytes;    /* the sum of the three */
  uint64_t device_allocated_bytes; /* measured: live device allocations of this device */
  uint64_t device_peak_bytes;      /* measured: their high-water mark */
} remat_memory_report;

REMAT_API remat_status remat_session_memory_report(const remat_session* session,
                                                   remat_memory_report* report);

/* ---- text: tokenizers and training rows (remat/remat_text.h) -------------------------------- */

#include "remat/remat_text.h"

#ifdef __cplusplus
}
#endif

#endif /* REMAT_REMAT_H */
