#!/usr/bin/env bash
# Compare `webert bench` with onnxruntime (1 thread) on the same inputs, and
# report peak RSS of a CLI `ner` run on the PII model next to its f32 weight size.
# Usage: scripts/bench.sh [RUNS] [WARMUP]     (env PY: python with onnxruntime and tokenizers;
# default: the venv scripts/setup.sh makes for the ONNX dtype files, tokenizers added to it)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-30}
WARMUP=${2:-5}
venv=target/onnx-dtypes-venv/bin/python
if [ -z "${PY:-}" ] && [ -x "$venv" ]; then
  PY=$venv
  "$PY" -c 'import tokenizers' 2>/dev/null || "$PY" -m pip install -q tokenizers
fi
PY=${PY:?set PY to a python with onnxruntime and tokenizers (or run scripts/setup.sh)}
WEBERT=target/release/webert
export HF_HUB_OFFLINE=1
CONFIGS="minilm-1x128 minilm-1x15 minilm-8x128 pii-1x128 pii-1x15"   # model-BATCHxLEN
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

[ -x "$WEBERT" ] || cargo build --release
# MiniLM's f32 ONNX: the torch export where torch is, else optimum's layout from setup.sh's files.
if [ ! -f models/bench/minilm.onnx ]; then
  mkdir -p models/bench
  "$PY" -c 'import torch' 2>/dev/null && "$PY" scripts/export_minilm_onnx.py ||
    cp target/onnx-dtypes/minilm-optimum-fp32.onnx models/bench/minilm.onnx
fi

# Each config: webert then ORT back to back, so both see similar load from
# other processes (the build machine is shared); min_ms is the less noisy figure.
echo "median (and min) ms over $RUNS runs after $WARMUP warm-up, one thread each"
printf '%-13s %17s %17s %18s\n' config "webert ms (min)" "ort ms (min)" "webert/ort (min)"
for c in $CONFIGS; do
  m=${c%-*}; bl=${c#*-}
  w=$("$WEBERT" bench --threads 1 --model "models/$m" --batch "${bl%x*}" --seq-len "${bl#*x}" --runs "$RUNS" --warmup "$WARMUP" \
      | jq -r '"\(.median_ms) \(.min_ms)"')
  o=$("$PY" scripts/bench_ort.py --only "$c" --runs "$RUNS" --warmup "$WARMUP" | jq -r '"\(.median_ms) \(.min_ms)"')
  echo "$c $w $o" | awk '{ printf "%-13s %8.2f (%6.2f) %8.2f (%6.2f) %9.2f (%6.2f)\n", $1, $2, $3, $4, $5, $2/$4, $3/$5 }'
done

# Peak RSS of one CLI run vs. the model's weights as f32.
[ -x /usr/bin/time ] || apt-get install -y time >/dev/null
TEXT="My name is Sarah Jones and my email is sarah.jones@example.com; call me at 555-123-4567."
rss_kb=$(/usr/bin/time -v "$WEBERT" ner --model models/pii --aggregation simple --text "$TEXT" 2>&1 >/dev/null \
  | awk -F': ' '/Maximum resident set size/ { print $2 }')
"$WEBERT" import-onnx --onnx models/pii/onnx/model_q4.onnx --out "$OUT/pii.safetensors" 2>/dev/null
f32_bytes=$("$PY" - "$OUT/pii.safetensors" <<'EOF'
import json, math, struct, sys
with open(sys.argv[1], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
print(sum(4 * math.prod(t["shape"]) for k, t in header.items() if k != "__metadata__"))
EOF
)
awk -v r="$rss_kb" -v b="$f32_bytes" -v q="$(stat -c %s models/pii/onnx/model_q4.onnx)" 'BEGIN {
  printf "\npii ner CLI peak RSS: %.1f MiB; f32 weights: %.1f MiB (%d params); q4 onnx file: %.1f MiB\n",
         r / 1024, b / 1048576, b / 4, q / 1048576 }'
