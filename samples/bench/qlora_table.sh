#!/usr/bin/env bash
# The QLoRA memory and step-time table of docs/gguf.md: random weights at a preset's
# shape, quantized by llama.cpp's own quantizer (build/bin/remat_random_gguf_model, built with the
# tests once .ci/fetch-test-data has run), LoRA r 8 on all seven projections, batch 4, seq 256.
# For each base (the file's blocks, or decoded to bf16 or f32): the smallest whole-session
# memory that plans, and the step time at one fixed plan (--policy every:1, loss in chunks of 128
# rows), the median of the steps after the first.
#   samples/bench/qlora_table.sh [OUT_DIR] [STEPS]
set -euo pipefail
out=${1:-/tmp/remat-qlora}
steps=${2:-3}
bin=$(dirname "$0")/../../build/bin
mkdir -p "$out"
data=/usr/share/common-licenses/GPL-3

model() {  # PRESET TYPE -> path
  local f="$out/$1-$2.gguf"
  [ -f "$f" ] || "$bin/remat_random_gguf_model" "$1" "$f" "$2" >&2
  echo "$f"
}

# The smallest --memory that plans, from remat plan's refusal of a 1 MiB budget.
smallest() {
  "$bin/remat" plan --init "$1" --lora 8 --batch 4 --seq 256 --memory 1MiB "${@:2}" 2>&1 |
    sed -n 's/.*smallest plan.s total of \([^(]*\) (.*/\1/p'
}

step_ms() {
  "$bin/remat" train --init "$1" --lora 8 --batch 4 --seq 256 --policy every:1 --loss-chunk 128 \
    --steps "$steps" --data "$data" --data-format bytes "${@:2}" 2>&1 |
    awk '/^step /{for(i=1;i<=NF;i++) if($i=="ms/step") print $(i-1)}' | tail -n +2 | sort -n |
    awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'
}

printf '%-14s %-8s %-10s %14s %12s\n' model file base "smallest total" "ms/step"
for spec in "smollm2-135m Q8_0" "smollm2-135m Q4_K_M" "qwen2.5-0.5b Q4_K_M"; do
  set -- $spec
  f=$(model "$1" "$2")
  for base in blocks bf16 f32; do
    case $base in
      blocks) flags=() ;;
      *) flags=(--base-blocks no --weights-dtype "$base") ;;
    esac
    printf '%-14s %-8s %-10s %14s %12s\n' "$1" "$2" "$base" "$(smallest "$f" "${flags[@]}")" \
      "$(step_ms "$f" "${flags[@]}")"
  done
done
