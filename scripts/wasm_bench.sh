#!/usr/bin/env bash
# Speed of the wasm32 CPU path without the JS package: examples/gemm_bench (GFLOP/s per micro-kernel
# on MiniLM's GEMM shapes) and examples/wasm_bench (MiniLM and PII at 128 tokens), built for
# wasm32-wasip1 twice (simd128; simd128 + relaxed-simd) and run in Node 20's WASI; gemm_bench also
# in headless Chromium (tests/bench/wasi-chromium.mjs; needs tests/bench's npm deps, see
# bench_browser.sh), whose newer V8 can rank the kernels differently.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/wasm_flags.sh
for build in "+simd128 target" "+simd128,+relaxed-simd target/relaxed"; do
  read -r features dir <<<"$build"
  RUSTFLAGS="-C target-feature=$features $wasm_codegen" cargo build --release --target wasm32-wasip1 --target-dir "$dir" \
    --example gemm_bench --example wasm_bench
  bin=$dir/wasm32-wasip1/release/examples
  flags=(--no-warnings)
  [[ $features == *relaxed-simd* ]] && flags+=(--experimental-wasm-relaxed-simd)
  echo "== $features, Node $(node --version)"
  # Node 20's WASI may crash at exit after the figures are out (see wasi-run.mjs): not fatal here.
  node "${flags[@]}" scripts/wasi-run.mjs "$bin/gemm_bench.wasm" || echo "(node exited with $?)"
  node "${flags[@]}" scripts/wasi-run.mjs "$bin/wasm_bench.wasm" "$PWD/models/minilm" "$PWD/models/pii" ||
    echo "(node exited with $?)"
  if [ -d tests/bench/node_modules/playwright-core ]; then
    echo "== $features, Chromium"
    node tests/bench/wasi-chromium.mjs "$bin/gemm_bench.wasm"
  fi
done
