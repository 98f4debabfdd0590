#!/usr/bin/env bash
# The test command: set-up (idempotent), the Rust test suite against the committed goldens,
# the library as WebAssembly under WASI, then the npm package (three wasm32 builds) in Node,
# Chromium, Firefox and WebKit.
set -euo pipefail
cd "$(dirname "$0")/.."
# Where the time goes, for keeping CI short: each phase's end, in seconds since the start.
mark() { echo "== scripts/test.sh: $1 done at ${SECONDS}s" >&2; }
# A browser test that hangs (a child process left running) fails here in 20 minutes instead of
# running CI out of time.
bounded() { timeout --kill-after=30s 1200s "$@"; }
bash scripts/setup.sh
mark set-up
# Mesa's Vulkan drivers want a runtime dir; without one they print an error per device.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
# The GPU tests must find the lavapipe adapter here instead of skipping.
export WEBERT_REQUIRE_GPU=1
# And the ONNX dtype files scripts/setup.sh builds (tests/onnx_dtypes.rs) must all be there.
export WEBERT_REQUIRE_ONNX_DTYPES=1
# And every browser engine (Chromium, Firefox ESR, WebKitGTK: scripts/setup.sh installs them).
export WEBERT_REQUIRE_BROWSERS=1
cargo test --all-targets
mark "native tests"
source scripts/wasm_flags.sh
# The same code as WebAssembly (simd128 + relaxed-simd), run in Node's WASI: the kernels (every
# wasm tile, simd128 ones included, against naive references), ONNX import, and the tiny model
# families against PyTorch. The simd128-only binary is the package's, built and run against the
# goldens in Node below. (The real-model goldens pass here too, but Node 20 WASI crashes
# intermittently around them; see wasi-run.mjs.)
# (Built without LTO and in 16 codegen units: these test the kernels' code, not the shipped
# binary, which the package tests below do; a third of the build time on two cores.)
CARGO_TARGET_WASM32_WASIP1_RUNNER="node --no-warnings --experimental-wasm-relaxed-simd scripts/wasi-run.mjs" \
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd $wasm_codegen" \
  cargo test --release --target wasm32-wasip1 --target-dir target/relaxed --lib --test families
# The relaxed build's integer kernel tests in Chromium, whose V8 runs the relaxed int8 tiles
# (Node 20's does not): q8 and q4 tiles, the fused dot and the two-step one, bit for bit
# against the integer references there.
relaxed_lib=$(ls -t target/relaxed/wasm32-wasip1/release/deps/webert-*.wasm | head -1)
out=$(node tests/bench/wasi-chromium.mjs "$relaxed_lib" cpu::qgemm cpu::qpack cpu::quantize cpu::dynamic_quant \
  --test-threads 1 --nocapture)
echo "$out"
tiles=$(grep "q8 tiles checked:" <<<"$out")
grep -q "test result: ok" <<<"$out" && grep -q "relaxed-simd int8 pairs" <<<"$tiles" && grep -Eq "relaxed-simd int8(,|$)" <<<"$tiles"
# The browser product: the npm package (wasm-bindgen + JS wrapper) in Node against the goldens,
# then in headless Chromium: the demo page's tabs, 100 overlapping calls, offline, no WebGPU,
# and fresh Vite / plain-ESM apps that install the `npm pack` tarball. Screenshots:
# target/browser-artifacts/. Built with the test hooks (`webert/testing`), which the tests use.
mark "WASI and relaxed-SIMD tile tests"
WEBERT_WEB_FEATURES=test-hooks bash scripts/build_web.sh --if-changed
mark "package build"
bounded node --test --test-reporter=spec tests/browser/tasks.test.mjs tests/browser/builds.test.mjs tests/browser/snippets.test.mjs tests/browser/node.test.mjs tests/browser/hub.test.mjs tests/browser/sources.test.mjs tests/browser/call-faults.test.mjs
bounded node --experimental-wasm-relaxed-simd --test --test-reporter=spec tests/browser/node.test.mjs
bounded node --test --test-reporter=spec tests/browser/train.test.mjs
mark "Node package tests"
bounded node --test --test-reporter=spec --test-concurrency=1 tests/browser/demo.test.mjs tests/browser/demo_state.test.mjs tests/browser/teach.test.mjs tests/browser/pretraining_demo.test.mjs tests/browser/consumer.test.mjs tests/browser/hub-browser.test.mjs tests/browser/faults-browser.test.mjs tests/browser/soak.test.mjs
mark "Chromium tests"
# The package and the demo in all three engines (Firefox ESR over WebDriver BiDi, WebKitGTK over
# W3C WebDriver, and Chromium for comparable figures): builds, tasks against the goldens, the
# Cache API across dispose(), the demo's tabs with layout checks at 1280 and 390 px; then the
# Chromium suite's faults and a short soak in Firefox and WebKit. Every browser must be there
# (scripts/setup.sh installs them).
# Now and then (2 of 3 runs of this phase here, never when one engine's test runs alone) a
# package load in Firefox or WebKit never answers; its cause is not found yet (docs/browser.md).
# A failed phase runs once more, and says so above its output.
engines() { bounded node --test --test-reporter=spec tests/browser/engines.test.mjs tests/browser/engine-faults.test.mjs; }
if ! engines; then
  echo "== scripts/test.sh: the Firefox and WebKit tests failed; running them once more" >&2
  engines
fi
mark "Firefox and WebKit tests"
