#!/usr/bin/env bash
# Two webert builds side by side (CPU, one thread): each row runs A then B back to back,
# ROUNDS times, so both see the same load from other processes; prints the medians of
# each one's per-round median and B/A. For "no slowdown" checks of a change that should
# not move speed: build the old commit in a worktree, then
#   scripts/bench_ab.sh OLD/target/release/webert target/release/webert [ROUNDS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?old webert binary}
B=${2:?new webert binary}
ROUNDS=${3:-5}
RUNS=${4:-20}
ROWS=${ROWS:-"minilm:fp32:1x15 minilm:fp32:1x128 minilm:fp32:8x128 minilm:q8:1x15 minilm:q8:1x128 pii:q4:1x15 pii:q4:1x128"}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
one() { # binary model dtype BxL
  "$1" bench --threads 1 --model "models/$2" --dtype "$3" --batch "${4%x*}" --seq-len "${4#*x}" \
    --backend cpu --runs "$RUNS" --warmup 3 | jq -r .median_ms
}

printf '%-22s %10s %10s %8s\n' row "A ms" "B ms" "B/A"
for row in $ROWS; do
  IFS=: read -r model dtype shape <<<"$row"
  a=(); b=()
  for _ in $(seq "$ROUNDS"); do
    a+=("$(one "$A" "$model" "$dtype" "$shape")")
    b+=("$(one "$B" "$model" "$dtype" "$shape")")
  done
  ma=$(printf '%s\n' "${a[@]}" | median)
  mb=$(printf '%s\n' "${b[@]}" | median)
  awk -v r="$row" -v a="$ma" -v b="$mb" 'BEGIN { printf "%-22s %10.2f %10.2f %8.3f\n", r, a, b, b / a }'
done
