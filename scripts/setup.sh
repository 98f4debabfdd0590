#!/usr/bin/env bash
# Installs what building and testing webert needs on a fresh machine, then fetches the models.
# Idempotent: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
need_apt=()
command -v unzip >/dev/null || need_apt+=(unzip)
command -v node >/dev/null || need_apt+=(nodejs npm)
# The browser tests drive Debian's Chromium (playwright-core, no downloaded browsers).
[ -x /usr/bin/chromium ] || need_apt+=(chromium chromium-driver)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
for t in wasm32-unknown-unknown wasm32-wasip1; do
  rustup target list --installed | grep -q "^$t\$" || rustup target add "$t"
done
# The wasm-bindgen CLI must be the version of the wasm-bindgen crate in Cargo.lock.
want=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p')
if [ "$(wasm-bindgen --version 2>/dev/null | cut -d' ' -f2)" != "$want" ]; then
  cargo install wasm-bindgen-cli --version "$want"
fi
# Test tooling (playwright-core, vite, typescript, binaryen's wasm-opt), pinned by package-lock.json.
if ! (cd tests/browser && npm ls --depth=0 >/dev/null 2>&1); then
  (cd tests/browser && npm ci --no-audit --no-fund)
fi
bash scripts/fetch_models.sh
