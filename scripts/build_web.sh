#!/usr/bin/env bash
# Builds the npm package into www/pkg (also what the demo page imports): the wasm32 library three
# times, simd128 (webert_wasm_bg.wasm) and simd128 + relaxed-simd with FMA (webert_wasm_relaxed_bg
# .wasm; WebAssembly has no run-time feature detection, so www/pkg-src/simd.js picks one at load),
# with wasm-bindgen's --target web glue (the same glue serves Node and both binaries); and the
# threads build (relaxed-simd + atomics on shared memory, std rebuilt for it: webert_wasm_threads
# with its own glue; www/pkg-src/runtime.js starts it where pages are cross-origin isolated); wasm-opt when
# binaryen's npm build is installed (Debian's binaryen 108 produces modules that crash Chromium),
# and the JS wrapper, worker and types from www/pkg-src, the worker's modules bundled into one file
# by rolldown (scripts/worker_bundle.config.mjs; vite's, in tests/browser). Prints the .wasm sizes
# raw and gzipped.
# WEBERT_WEB_FEATURES: cargo features for all three builds, e.g. `test-hooks` (the wasm side of
# the package's `webert/testing` entry point; scripts/test.sh builds with it).
# `--if-changed` (scripts/demo.sh, scripts/test.sh): keep the .wasm files and their glue when a
# stamp of every input (sources, shaders, Cargo files, these scripts, features, tool versions)
# equals the one they were built from, in www/pkg or in the copy of the last build with these
# features (target/web-builds/); the JS is copied again either way.
set -euo pipefail
cd "$(dirname "$0")/.."
if_changed=false
[ "${1:-}" = "--if-changed" ] && if_changed=true
want=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p')
have=$(wasm-bindgen --version 2>/dev/null | cut -d' ' -f2 || true)
if [ "$want" != "$have" ]; then
  echo "wasm-bindgen CLI $have does not match Cargo.lock's $want: run scripts/setup.sh" >&2
  exit 1
fi
out=www/pkg
opt=tests/browser/node_modules/.bin/wasm-opt
rolldown=tests/browser/node_modules/.bin/rolldown
# The package's JS into $out, the worker as one file.
copy_js() {
  cp www/pkg-src/*.js www/pkg-src/*.d.ts www/pkg-src/package.json www/pkg-src/README.md "$out/"
  if [ -x "$rolldown" ]; then
    "$rolldown" -c scripts/worker_bundle.config.mjs --logLevel warn >/dev/null
    mv "$out/.worker.bundle.js" "$out/worker.js"
  else
    echo "(worker bundle skipped: npm install in tests/browser for rolldown)"
  fi
}
stamp=$( {
  find src shaders Cargo.toml Cargo.lock build.rs scripts/build_web.sh scripts/wasm_flags.sh -type f 2>/dev/null |
    LC_ALL=C sort | xargs sha256sum
  echo "features=${WEBERT_WEB_FEATURES:-} rustflags=${RUSTFLAGS:-} $(rustc -V) wasm-bindgen=$have wasm-opt=$([ -x "$opt" ] && echo yes)"
} | sha256sum | cut -d' ' -f1)
# The last build of each feature set is kept beside the others (the demo's and the tests' differ:
# scripts/demo.sh after scripts/test.sh swaps builds instead of rebuilding).
saved="target/web-builds/${WEBERT_WEB_FEATURES:-default}"
wasm_files=(webert_wasm.js webert_wasm_threads.js webert_wasm_bg.wasm webert_wasm_relaxed_bg.wasm webert_wasm_threads_bg.wasm)
built() {
  for f in "${wasm_files[@]}"; do [ -f "$1/$f" ] || return 1; done
  [ "$(cat "$1/.wasm-stamp" 2>/dev/null)" = "$stamp" ]
}
if $if_changed && { built "$out" || built "$saved"; }; then
  if built "$out"; then
    echo "wasm builds are up to date (same inputs as $out/.wasm-stamp): JS only"
    find "$out" -maxdepth 1 -type f ! -name 'webert_wasm*' ! -name .wasm-stamp -delete
  else
    echo "wasm builds of these inputs kept in $saved: copied, JS only"
    rm -rf "$out" && mkdir -p "$out"
    for f in "${wasm_files[@]}" .wasm-stamp; do cp "$saved/$f" "$out/"; done
  fi
  copy_js
  echo "$out ready"
  exit 0
fi
rm -rf "$out"
cargo_features=()
[ -n "${WEBERT_WEB_FEATURES:-}" ] && cargo_features=(--features "$WEBERT_WEB_FEATURES")
source scripts/wasm_flags.sh
[ -x "$opt" ] || echo "(wasm-opt skipped: npm install in tests/browser for binaryen)"
# Shared memory up to 4 GiB, imported so that helper workers can share it; the TLS exports are
# what wasm-bindgen's thread start-up needs.
threads_flags="-C link-arg=--shared-memory -C link-arg=--max-memory=4294967296 -C link-arg=--import-memory"
for sym in __wasm_init_tls __tls_size __tls_align __tls_base; do threads_flags+=" -C link-arg=--export=$sym"; done
optimizing=()
# name, target features, cargo target dir (one per feature set, so no rebuild evicts another)
for build in "webert_wasm +simd128 target" "webert_wasm_relaxed +simd128,+relaxed-simd target/relaxed" \
  "webert_wasm_threads +simd128,+relaxed-simd,+atomics,+bulk-memory,+mutable-globals target/threads"; do
  read -r name features dir <<<"$build"
  glue=webert_wasm
  if [[ $features == *atomics* ]]; then
    # The atomics build needs std compiled for it: a nightly-only cargo flag, allowed on stable
    # by RUSTC_BOOTSTRAP (needs the rust-src component, see scripts/setup.sh). rustc warns that
    # `atomics` is an unstable target feature; that is expected.
    glue=$name
    RUSTC_BOOTSTRAP=1 RUSTFLAGS="-C target-feature=$features $wasm_codegen $threads_flags" cargo build --lib --release \
      --target wasm32-unknown-unknown --target-dir "$dir" -Z build-std=std,panic_abort "${cargo_features[@]}"
  else
    RUSTFLAGS="-C target-feature=$features $wasm_codegen" cargo build --lib --release --target wasm32-unknown-unknown --target-dir "$dir" \
      "${cargo_features[@]}"
  fi
  tmp=$(mktemp -d)
  wasm-bindgen --target web --out-dir "$tmp" --out-name "$glue" --experimental-reset-state-function \
    "$dir/wasm32-unknown-unknown/release/webert.wasm"
  mkdir -p "$out"
  if [ "$glue" != webert_wasm ]; then
    cp "$tmp/$glue.js" "$out/"
  elif [ -f "$out/webert_wasm.js" ]; then
    # Only the comments naming closure shim indices may differ between the two builds.
    code() { grep -v '^ *// Cast intrinsic for' "$1"; }
    cmp -s <(code "$tmp/webert_wasm.js") <(code "$out/webert_wasm.js") ||
      { echo "the two builds' wasm-bindgen glue differs" >&2; exit 1; }
  else
    cp "$tmp/webert_wasm.js" "$out/"
  fi
  wasm="$out/${name}_bg.wasm"
  relaxed=--disable-relaxed-simd
  [[ $features == *relaxed-simd* ]] && relaxed=--enable-relaxed-simd
  threads=--disable-threads
  [[ $features == *atomics* ]] && threads=--enable-threads
  if [ -x "$opt" ]; then
    # In the background: wasm-opt runs on one core while the next build's (mostly one-core) LTO
    # link runs on the other.
    ( "$opt" -O3 --enable-simd "$relaxed" "$threads" --enable-bulk-memory --enable-sign-ext \
      --enable-nontrapping-float-to-int --enable-mutable-globals --enable-reference-types \
      --enable-multivalue "$tmp/${glue}_bg.wasm" -o "$wasm" && rm -rf "$tmp" ) &
    optimizing+=($!)
  else
    cp "$tmp/${glue}_bg.wasm" "$wasm"
    rm -rf "$tmp"
  fi
done
for pid in "${optimizing[@]}"; do
  wait "$pid" || { echo "wasm-opt failed" >&2; exit 1; }
done
copy_js
echo "$stamp" >"$out/.wasm-stamp"
rm -rf "$saved" && mkdir -p "$saved"
for f in "${wasm_files[@]}" .wasm-stamp; do cp "$out/$f" "$saved/"; done
for f in "$out"/*.wasm; do
  echo "$f: $(stat -c %s "$f") bytes raw, $(gzip -9c "$f" | wc -c) gzip -9"
done
echo "$out ready"
