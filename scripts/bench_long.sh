#!/usr/bin/env bash
# Long inputs on a ModernBERT-base-shaped model (tests/bench/modernbert-base: the published
# config, seeded weights): ms per forward and the process's peak resident memory at each length,
# on the CPU (examples/cpu_profile.rs, one process per length, so each peak is its own) and on
# the GPU (`webert bench --backend gpu`: here Mesa's lavapipe, CPU-emulated, so its memory is
# the process's too). Then a sliding-window layer against a global one at the longest length:
# the CPU's attention time per layer of each kind in the published model (every 3rd layer
# global).
# Usage: scripts/bench_long.sh [LENGTHS] [THREADS] [GPU_LENGTHS]
set -euo pipefail
cd "$(dirname "$0")/.."
LENGTHS=${1:-512 2048 8192}
THREADS=${2:-1}
GPU_LENGTHS=${3:-512 2048}
PROFILE=target/release/examples/cpu_profile
WEBERT=target/release/webert
[ -x "$PROFILE" ] || cargo build --release --example cpu_profile
[ -x "$WEBERT" ] || cargo build --release --bin webert
MODEL=tests/bench/modernbert-base
echo "ModernBERT-base shape (22 layers, 8 global; window 128), seeded f32 weights, 1 sequence"
printf '%-8s %-6s %10s %12s\n' backend tokens "ms" "peak MiB"
for n in $LENGTHS; do
  out=$("$PROFILE" --model "$MODEL" --shape config --f32 --threads "$THREADS" --tokens "$n" --runs 1)
  ms=$(sed -n 's/.*tokens: \([0-9.]*\) ms per forward.*/\1/p' <<<"$out")
  mib=$(sed -n 's/peak resident memory \([0-9.]*\) MiB/\1/p' <<<"$out")
  printf '%-8s %-6s %10s %12s\n' cpu "$n" "$ms" "$mib"
done
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
for n in $GPU_LENGTHS; do
  json=$("$WEBERT" bench --model "$MODEL" --shape config --backend gpu --seq-len "$n" --runs 1 --warmup 1 2>/dev/null) || {
    echo "gpu      $n: no GPU run (${json:-failed})"; continue; }
  node -e 'const j = JSON.parse(process.argv[1]);
    console.log(`gpu      ${String(j.seq_len).padEnd(6)} ${j.median_ms.toFixed(1).padStart(10)} ${j.peak_rss_mib.toFixed(1).padStart(12)}   (${j.backend})`)' "$json"
done
n=${LENGTHS##* }
echo
echo "attention at $n tokens, CPU, $THREADS thread(s): ms per layer"
out=$("$PROFILE" --model "$MODEL" --shape config --f32 --threads "$THREADS" --tokens "$n" --runs 1)
awk '
  / attention, sliding window$/ { printf "  sliding window: %9.1f ms over 14 layers = %8.1f ms per layer\n", $1, $1 / 14 }
  / attention$/ { printf "  global:         %9.1f ms over  8 layers = %8.1f ms per layer\n", $1, $1 / 8 }' <<<"$out"
