#!/usr/bin/env bash
# Installs what building and testing webert needs on a fresh machine, then fetches the models.
# Idempotent: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
# The wasm-bindgen CLI must be the version of the wasm-bindgen crate in Cargo.lock. Its build (two
# minutes on two cores) runs in the background while the steps below mostly download.
want=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p')
wasm_bindgen_pid=
if [ "$(wasm-bindgen --version 2>/dev/null | cut -d' ' -f2)" != "$want" ]; then
  mkdir -p target
  # A quick build of a tool that runs for seconds: opt-level 1, no LTO, more codegen units.
  CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_DEBUG=0 cargo install wasm-bindgen-cli --version "$want" >target/wasm-bindgen-install.log 2>&1 &
  wasm_bindgen_pid=$!
fi
need_apt=()
command -v unzip >/dev/null || need_apt+=(unzip)
# Mesa's lavapipe: a Vulkan adapter on the CPU, so the GPU executor is tested without a GPU.
[ -f /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] || need_apt+=(mesa-vulkan-drivers libvulkan1)
command -v node >/dev/null || need_apt+=(nodejs npm)
# A Python venv for the ONNX dtype test files (below).
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
# The browser tests drive Debian's Chromium (playwright-core, no downloaded browsers).
[ -x /usr/bin/chromium ] || need_apt+=(chromium chromium-driver)
# And Firefox ESR (WebDriver BiDi, through puppeteer-core) and WebKitGTK (WebKitWebDriver +
# MiniBrowser, on an Xvfb display): tests/browser/engines.test.mjs.
[ -x /usr/bin/firefox-esr ] || need_apt+=(firefox-esr)
[ -x /usr/bin/WebKitWebDriver ] || need_apt+=(webkit2gtk-driver)
[ -x /usr/bin/Xvfb ] || need_apt+=(xvfb)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
for t in wasm32-unknown-unknown wasm32-wasip1; do
  rustup target list --installed | grep -q "^$t\$" || rustup target add "$t"
done
# The WebAssembly threads build recompiles std with atomics (scripts/build_web.sh).
rustup component list --installed | grep -q '^rust-src' || rustup component add rust-src
# Test tooling (playwright-core, puppeteer-core, vite, typescript, binaryen's wasm-opt), pinned by
# package-lock.json. No browser downloads: the tests drive Debian's browsers.
export PUPPETEER_SKIP_DOWNLOAD=1
if ! (cd tests/browser && npm ls --depth=0 >/dev/null 2>&1); then
  # `npm install`, not `npm ci`: vite lists an optional dependency the registry no longer serves,
  # which `npm ci` refuses; the lock file still pins every installed version.
  (cd tests/browser && npm install --no-audit --no-fund)
fi
bash scripts/fetch_models.sh
# The ONNX dtype variants of the real models for tests/onnx_dtypes.rs (fp32 … q8 … bnb4, written
# with onnx + onnxruntime's quantizers, no torch) in target/onnx-dtypes; kept while their
# checksums match tests/golden/onnx_dtypes.json. The venv is pinned and cached under target/.
onnx_dir="${WEBERT_ONNX_DTYPES:-target/onnx-dtypes}"
venv=target/onnx-dtypes-venv
if [ ! -f "$venv/.pinned" ] || ! cmp -s scripts/onnx_dtypes_requirements.txt "$venv/.pinned"; then
  rm -rf "$venv"
  python3 -m venv "$venv" && "$venv/bin/pip" install -q -r scripts/onnx_dtypes_requirements.txt \
    && cp scripts/onnx_dtypes_requirements.txt "$venv/.pinned" \
    || echo "setup: no Python venv for the ONNX dtype files; tests/onnx_dtypes.rs will skip them" >&2
fi
if [ -x "$venv/bin/python" ]; then
  "$venv/bin/python" scripts/make_onnx_dtypes.py --out "$onnx_dir" >target/onnx-dtypes.log 2>&1 \
    || echo "setup: building the ONNX dtype files failed (target/onnx-dtypes.log)" >&2
fi
# The demo ships MiniLM quantized: the q8 file above (onnxruntime's quantizer at transformers.js's
# settings) goes into the demo's model folder as transformers.js names it, beside the safetensors.
models="${WEBERT_MODELS:-models}"
q8="$onnx_dir/minilm-optimum-q8.onnx"
if [ -f "$q8" ] && ! cmp -s "$q8" "$models/minilm/onnx/model_quantized.onnx"; then
  mkdir -p "$models/minilm/onnx" && cp "$q8" "$models/minilm/onnx/model_quantized.onnx"
fi
[ -f "$models/minilm/onnx/model_quantized.onnx" ] \
  || echo "setup: no q8 MiniLM for the demo (models/minilm/onnx/model_quantized.onnx); it offers f32 only" >&2
if [ -n "$wasm_bindgen_pid" ]; then
  wait "$wasm_bindgen_pid" || { cat target/wasm-bindgen-install.log >&2; echo "setup: installing wasm-bindgen-cli $want failed" >&2; exit 1; }
fi
