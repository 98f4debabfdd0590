#!/usr/bin/env bash
# Main job: set-up (models included), the npm package / wasm build, and the demo page served on
# 127.0.0.1 (PORT, default 8080) until Ctrl-C. The wasm builds are kept when nothing they are
# built from changed (build_web.sh --if-changed). `scripts/demo.sh --cli [TEXT]` instead runs PII
# detection on a sample text with the native CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "${1:-}" = "--cli" ]; then
  cargo build --release
  sample="Hi, I am Maria García. Mail me at maria.garcia@example.org or call +1 415 555 0132; I live at 221 Baker Street, Springfield 62704."
  text="${2:-$sample}"
  exec ./target/release/webert ner --model models/pii --aggregation first --text "$text"
fi
bash scripts/build_web.sh --if-changed
echo "Open http://127.0.0.1:${PORT:-8080}/ (the PII, classification, QA and similarity demos)"
exec node scripts/serve.mjs --port "${PORT:-8080}"
