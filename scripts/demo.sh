#!/usr/bin/env bash
# Main job for now: set-up, a release build, and PII detection on a sample text with the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release
sample="Hi, I am Maria García. Mail me at maria.garcia@example.org or call +1 415 555 0132; I live at 221 Baker Street, Springfield 62704."
text="${1:-$sample}"
./target/release/webert ner --model models/pii --aggregation first --text "$text"
