#!/usr/bin/env bash
# Prepares a run of scripts/h200_bench.sh on the lent GPU machine (the `device` tool): builds the
# x86_64 CLI here and puts it, MiniLM's tokenizer/config (`--shape` needs only those) and the
# Vulkan loader packages into git-ignored folders that the run carries:
#   carry: [".devbin", ".gl"], command: "bash scripts/h200_bench.sh"
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.gl/' .git/info/exclude 2>/dev/null || echo /.gl/ >>.git/info/exclude
grep -qx '/.devbin/' .git/info/exclude 2>/dev/null || echo /.devbin/ >>.git/info/exclude
cargo build --release --bin webert
mkdir -p .devbin/minilm
cp target/release/webert .devbin/
cp models/minilm/{config.json,tokenizer.json,tokenizer_config.json} .devbin/minilm/
if ! ls .gl/*.deb >/dev/null 2>&1; then
  mkdir -p .gl /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update -qq
  (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
du -sh .devbin .gl
