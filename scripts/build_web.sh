#!/usr/bin/env bash
# Builds the npm package into www/pkg (also what the demo page imports): the wasm32 simd128
# library, wasm-bindgen's --target web glue (the same glue serves Node), wasm-opt when binaryen's
# npm build is installed (Debian's binaryen 108 produces modules that crash Chromium), and the
# JS wrapper, worker and types from www/pkg-src. Prints the .wasm size raw and gzipped.
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTFLAGS="-C target-feature=+simd128" cargo build --lib --release --target wasm32-unknown-unknown
want=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p')
have=$(wasm-bindgen --version 2>/dev/null | cut -d' ' -f2 || true)
if [ "$want" != "$have" ]; then
  echo "wasm-bindgen CLI $have does not match Cargo.lock's $want: run scripts/setup.sh" >&2
  exit 1
fi
out=www/pkg
rm -rf "$out"
wasm-bindgen --target web --out-dir "$out" --out-name webert_wasm --experimental-reset-state-function \
  target/wasm32-unknown-unknown/release/webert.wasm
rm -f "$out/webert_wasm.d.ts" "$out/webert_wasm_bg.wasm.d.ts"
opt=tests/browser/node_modules/.bin/wasm-opt
if [ -x "$opt" ]; then
  "$opt" -O3 --enable-simd --enable-bulk-memory --enable-sign-ext --enable-nontrapping-float-to-int \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    "$out/webert_wasm_bg.wasm" -o "$out/webert_wasm_bg.wasm"
else
  echo "(wasm-opt skipped: npm install in tests/browser for binaryen)"
fi
cp www/pkg-src/*.js www/pkg-src/*.d.ts www/pkg-src/package.json www/pkg-src/README.md "$out/"
raw=$(stat -c %s "$out/webert_wasm_bg.wasm")
gz=$(gzip -9c "$out/webert_wasm_bg.wasm" | wc -c)
echo "$out ready: webert_wasm_bg.wasm $raw bytes raw, $gz gzip -9"
