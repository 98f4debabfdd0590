#!/usr/bin/env bash
# Main job for now: set-up, a release build, and PII detection on a sample text with the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release
text="${1:-Hi, I'm Maria García. Mail me at maria.garcia@example.org or call +1 415 555 0132; I live at 221 Baker Street, Springfield 62704.}"
./target/release/webert ner --model models/pii --aggregation first --text "$text"
