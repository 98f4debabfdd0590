#!/usr/bin/env bash
# Corpus throughput of the CLI (`--input`/`--output`, README "Corpora"): LINES generated lines of
# short, varied PII-style text (seeded), through `ner` on models/pii and `embed` on
# models/minilm, at 1 and 2 threads; prints lines/s and the peak resident memory of each run.
# Usage: scripts/bench_corpus.sh [LINES] [BATCH]
set -euo pipefail
cd "$(dirname "$0")/.."
LINES=${1:-100000}
BATCH=${2:-32}
B=target/release/webert
[ -x "$B" ] || cargo build --release --bin webert
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
node -e '
  const n = Number(process.argv[1]);
  const names = ["John Smith", "Zoë Müller", "Maria García", "Hans Meier", "Anna Berg", "Li Wei"];
  const places = ["Springfield", "Zürich", "Madrid", "Berlin", "Oslo", "Lyon"];
  const tails = ["call me tomorrow.", "the invoice is attached.", "see you at the meeting on Friday.", "thanks for your help with the order."];
  let s = 12345;
  const r = (k) => ((s = (s * 1103515245 + 12345) % 2147483648), s % k);
  const out = [];
  for (let i = 0; i < n; i++) {
    const name = names[r(names.length)], place = places[r(places.length)];
    const phone = `+41 44 ${100 + r(900)} ${10 + r(90)} ${10 + r(90)}`;
    out.push(JSON.stringify({ id: i, text: `${name} from ${place}, phone ${phone}: ${tails[r(tails.length)]}` }));
  }
  process.stdout.write(out.join("\n") + "\n");
' "$LINES" > "$dir/in.jsonl"
echo "$LINES lines ($(wc -c < "$dir/in.jsonl") bytes), batch $BATCH"
printf '%-6s %-8s %10s %10s %10s\n' task threads seconds lines/s "peak MiB"
for task in ner embed; do
  model=models/pii
  [ "$task" = embed ] && model=models/minilm
  for threads in 1 2; do
    /usr/bin/time -f '%e %M' -o "$dir/time" "$B" "$task" --model "$model" --backend cpu --threads "$threads" \
      --input "$dir/in.jsonl" --output "$dir/out.jsonl" --batch "$BATCH" 2>/dev/null
    read -r secs kb < "$dir/time"
    got=$(wc -l < "$dir/out.jsonl")
    [ "$got" = "$LINES" ] || { echo "$task: $got records for $LINES lines" >&2; exit 1; }
    awk -v t="$task" -v th="$threads" -v s="$secs" -v n="$LINES" -v kb="$kb" \
      'BEGIN { printf "%-6s %-8s %10s %10.0f %10.0f\n", t, th, s, n / s, kb / 1024 }'
  done
done
