#!/usr/bin/env bash
# webert vs transformers.js in headless Chromium (out of CI: neither setup.sh nor test.sh runs this).
# Needs: www/pkg (scripts/build_web.sh), models/pii, models/minilm, and models/bench/minilm.onnx
# (an f32 ONNX export of MiniLM, scripts/export_minilm_onnx.py; transformers.js cannot read
# safetensors). Installs tests/bench's own npm deps (transformers.js + playwright-core) from its
# package-lock.json, with ONNXRUNTIME_NODE_INSTALL=skip and no install scripts (no network at run time).
#   bash scripts/bench_browser.sh [--runs 20] [--warmup 3] [--warmup-ms 2000] [--threads 1,2] [--webgpu [--gpu-runs 3] [--gpu-weights packed|dequantized]] [--no-worker] [--order alternate|blocks] [--models minilm,pii,minilm-q8,pii-q8] [--tokens 15,128] [--prefetch on|off] [--serve]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f www/pkg/webert.js ] || bash scripts/build_web.sh
# Without torch (scripts/export_minilm_onnx.py), optimum's f32 layout that setup.sh builds.
if [ ! -f models/bench/minilm.onnx ] && [ -f target/onnx-dtypes/minilm-optimum-fp32.onnx ]; then
  mkdir -p models/bench && ln -f target/onnx-dtypes/minilm-optimum-fp32.onnx models/bench/minilm.onnx
fi
for f in models/pii/onnx/model_q4.onnx models/minilm/tokenizer.json models/bench/minilm.onnx; do
  [ -f "$f" ] || { echo "missing $f (scripts/fetch_models.sh; models/bench/minilm.onnx: scripts/export_minilm_onnx.py)" >&2; exit 1; }
done
# transformers.js wants <model>/onnx/model.onnx next to the config and tokenizer.
t=models/bench/tjs-minilm
mkdir -p "$t/onnx"
[ "$t/onnx/model.onnx" -nt models/bench/minilm.onnx ] || cp models/bench/minilm.onnx "$t/onnx/model.onnx"
cp models/minilm/config.json models/minilm/tokenizer.json models/minilm/tokenizer_config.json "$t/"
# q8 rows (`--models minilm-q8,pii-q8`): the q8 files scripts/setup.sh builds, under the name
# transformers.js gives dtype 'q8', for both engines.
q8=models/minilm/onnx/model_quantized.onnx
[ -f "$q8" ] && cp "$q8" "$t/onnx/model_quantized.onnx"
if [ -f target/onnx-dtypes/pii-optimum-q8.onnx ]; then
  mkdir -p models/bench/pii-q8/onnx
  cp models/pii/config.json models/pii/tokenizer*.json models/bench/pii-q8/
  cp models/pii/special_tokens_map.json models/bench/pii-q8/ 2>/dev/null || true
  cp target/onnx-dtypes/pii-optimum-q8.onnx models/bench/pii-q8/onnx/model_quantized.onnx
fi
# Every transformers.js dtype of both models (packed_load.mjs --models dtypes), from the files
# scripts/setup.sh builds, under transformers.js's file names; hard links, not copies.
for m in minilm pii; do
  [ -f target/onnx-dtypes/$m-optimum-fp32.onnx ] || continue
  d=models/bench/dtypes-$m
  mkdir -p "$d/onnx"
  cp models/$m/config.json models/$m/tokenizer*.json "$d/"
  cp models/$m/special_tokens_map.json "$d/" 2>/dev/null || true
  for dt in fp32 fp16 q8 int8 uint8 q4 q4f16 bnb4; do
    case $dt in fp32) name=model ;; q8) name=model_quantized ;; *) name=model_$dt ;; esac
    ln -f target/onnx-dtypes/$m-optimum-$dt.onnx "$d/onnx/$name.onnx"
  done
done
[ -d tests/browser/node_modules/playwright-core ] ||
  { echo "missing tests/browser/node_modules (scripts/setup.sh): the bench launches Chromium as the browser tests do" >&2; exit 1; }
if [ ! -d tests/bench/node_modules/@huggingface/transformers ] || [ tests/bench/package-lock.json -nt tests/bench/node_modules ]; then
  (cd tests/bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --ignore-scripts)
fi
exec node tests/bench/run.mjs "$@"
