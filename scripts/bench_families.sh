#!/usr/bin/env bash
# CPU cost of each model family against BERT at the same width, depth and length: every
# family's own config (from its tiny folder in tests/tiny) resized to bert-base with seeded
# weights (`examples/cpu_profile.rs --shape`), exactly SEQ_LEN token ids, one thread; the
# families take turns, ROUNDS times, so that all see the same load. Prints each family's best
# forward (sum of per-op minima), its ratio to BERT, and where the time goes (attention).
# Usage: scripts/bench_families.sh [SEQ_LEN] [RUNS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
SEQ=${1:-128}
RUNS=${2:-3}
ROUNDS=${3:-3}
PROFILE=target/release/examples/cpu_profile
[ -x "$PROFILE" ] || cargo build --release --example cpu_profile
# bert-i4608: BERT with the MLP weight of Jina's GEGLU (intermediate 1.5 x 3072), the same work.
declare -A FOLDER=(
  [bert]=bert-bf16-sharded [albert]=albert-seqcls [mpnet]=mpnet-base-st
  [deberta-v1]=deberta-v1-seqcls [deberta-v3]=deberta-v3-seqcls [jina-v2]=jina-v2-base
  [bert-i4608]=bert-bf16-sharded
)
declare -A SHAPE=([bert-i4608]=768x12x12x4608)
ORDER="bert albert mpnet deberta-v1 deberta-v3 jina-v2 bert-i4608"
declare -A BEST ATTN
for round in $(seq "$ROUNDS"); do
  for f in $ORDER; do
    out=$("$PROFILE" --model "tests/tiny/${FOLDER[$f]}" --shape "${SHAPE[$f]:-bert-base}" --threads 1 \
      --tokens "$SEQ" --runs "$RUNS")
    ms=$(sed -n 's/.*sum of minima \([0-9.]*\)).*/\1/p' <<<"$out")
    attn=$(awk '/ attention/ { s += $5 } END { print s + 0 }' <<<"$out")
    if [ -z "${BEST[$f]:-}" ] || awk "BEGIN{exit !($ms < ${BEST[$f]})}"; then
      BEST[$f]=$ms
      ATTN[$f]=$attn
    fi
  done
done
echo "bert-base shape, 1 x $SEQ tokens, 1 thread: best of $ROUNDS rounds (sum of per-op minima over $RUNS runs)"
printf '%-11s %9s %10s %9s %14s\n' family "ms" "us/token" "vs BERT" "attention ms"
for f in $ORDER; do
  awk -v f="$f" -v ms="${BEST[$f]}" -v b="${BEST[bert]}" -v n="$SEQ" -v a="${ATTN[$f]}" \
    'BEGIN { printf "%-11s %9.1f %10.1f %8.2fx %14.1f\n", f, ms, 1000 * ms / n, ms / b, a }'
done
