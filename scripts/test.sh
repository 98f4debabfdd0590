#!/usr/bin/env bash
# The test command: set-up (idempotent), the Rust test suite against the committed goldens,
# and a wasm32 build of the library so the browser target never breaks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --all-targets
RUSTFLAGS="-C target-feature=+simd128" cargo build --lib --release --target wasm32-unknown-unknown
echo "wasm32 (simd128) library build: ok"
