#!/usr/bin/env bash
# Installs what building and testing webert needs on a fresh machine, then fetches the models.
# Idempotent: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
need_apt=()
command -v unzip >/dev/null || need_apt+=(unzip)
# Mesa's lavapipe: a Vulkan adapter on the CPU, so the GPU executor is tested without a GPU.
[ -f /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] || need_apt+=(mesa-vulkan-drivers libvulkan1)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${need_apt[@]}"
fi
for t in wasm32-unknown-unknown wasm32-wasip1; do
  rustup target list --installed | grep -q "^$t\$" || rustup target add "$t"
done
bash scripts/fetch_models.sh
