#!/usr/bin/env bash
# Qwen3.5's QLoRA memory on the device (docs/benchmarks.md, "Qwen3.5"): random weights at the
# preset's shape quantized to Q4_K_M by llama.cpp's own quantizer (build/bin/
# remat_random_gguf_model, built with the tests once .ci/fetch-test-data has run), LoRA r8 on every
# projection remat adapts by default, the base kept in its blocks. For each (preset, batch) the
# smallest whole-session memory that plans (remat plan's refusal of a 1 MiB budget names it), then
# STEPS training steps under --memory BUDGET on the default Vulkan device, whose `memory` line is
# what the device allocated (persistent + arena + the rest, "exactly as plan" or not).
#   samples/bench/qwen35_memory.sh [OUT_DIR] [STEPS] [SEQ]
set -euo pipefail
out=${1:-/tmp/remat-qwen35}
steps=${2:-1}
seq=${3:-512}
bin=$(dirname "$0")/../../build/bin
mkdir -p "$out"
data=/usr/share/common-licenses/GPL-3

model() {  # PRESET -> path of its Q4_K_M file
  local f="$out/$1-Q4_K_M.gguf"
  [ -f "$f" ] || "$bin/remat_random_gguf_model" "$1" "$f" Q4_K_M >&2
  echo "$f"
}

for spec in "qwen3.5-0.8b 4 1.1GiB" "qwen3.5-2b 1 2GiB"; do
  set -- $spec
  f=$(model "$1")
  flags=(--init "$f" --lora 8 --batch "$2" --seq "$seq" --loss-chunk auto)
  echo "== $1 Q4_K_M ($(du -m "$f" | cut -f1) MiB), QLoRA r8, B=$2 T=$seq"
  "$bin/remat" plan "${flags[@]}" --memory 1MiB 2>&1 | grep -o 'smallest plan.s total of [^)]*)' || true
  echo "\$ remat train ${flags[*]} --memory $3 --steps $steps"
  "$bin/remat" train "${flags[@]}" --memory "$3" --steps "$steps" --data "$data" \
    --data-format bytes 2>&1 | grep -E '^(plan|memory|step|done|remat: error)' || true
done
