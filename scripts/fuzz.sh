#!/usr/bin/env bash
# Fuzzes the parsers that see outside bytes (cargo-fuzz, nightly; `cargo install cargo-fuzz`):
#   bash scripts/fuzz.sh [TARGET|all] [RUNS]      (default: all, 200000 executions each;
#   WEBERT_FUZZ_SECONDS=N also stops each target after N seconds)
# Targets (tests/fuzz/fuzz_targets, each one call into webert::fuzz): safetensors, config,
# tokenizer, onnx, web_call, head. For each: seeds are made in target/fuzz-seeds/TARGET (the
# tiny and real models' files and their truncations, mini ONNX encoders, head files), the target
# runs RUNS executions over the committed corpus and the seeds (new inputs land in
# target/fuzz-work/TARGET), then the committed corpus tests/fuzz/corpus/TARGET is replaced by a
# minimized merge (libFuzzer -merge=1) of everything up to $WEBERT_FUZZ_CAP bytes per input
# (default 16384; larger seeds stay generated). A crash stops the run and leaves its input in
# tests/fuzz/artifacts/TARGET: fix it, then move the input to tests/fuzz/regressions/TARGET,
# which tests/fuzz_corpus.rs replays on stable along with the corpus.
# The log of each run is target/fuzz-work/TARGET.log (execs, cov and ft figures).
set -euo pipefail
cd "$(dirname "$0")/.."
all=(config head safetensors tokenizer onnx web_call)
want=${1:-all}
runs=${2:-200000}
cap=${WEBERT_FUZZ_CAP:-16384}
seconds=${WEBERT_FUZZ_SECONDS:-0}
[ "$want" = all ] && targets=("${all[@]}") || targets=("$want")
fuzz=(cargo +nightly fuzz)
opts=(--fuzz-dir tests/fuzz --target-dir target/fuzz -s none -a)
bin=target/fuzz/x86_64-unknown-linux-gnu/release

seeds() {
  local t=$1 dir=target/fuzz-seeds/$1
  rm -rf "$dir" && mkdir -p "$dir"
  # The first `n` bytes of `file` as seed `name`.
  cut_to() { head -c "$2" "$1" > "$dir/$3"; }
  case $t in
    safetensors)
      for f in tests/tiny/*/*.safetensors; do
        n=$(basename "$(dirname "$f")")-$(basename "$f")
        cp "$f" "$dir/$n"
        for k in 64 1000 4096; do cut_to "$f" $k "$n.$k"; done
      done
      for f in models/*/model.safetensors; do
        [ -f "$f" ] && cut_to "$f" 65536 "$(basename "$(dirname "$f")").head"
      done ;;
    config)
      for f in tests/tiny/*/config.json models/*/config.json tests/heads/*/config.json; do
        [ -f "$f" ] || continue
        n=$(echo "$f" | tr / _)
        cp "$f" "$dir/$n"
        cut_to "$f" 200 "$n.200"
      done ;;
    tokenizer)
      for f in tests/tiny/*/tokenizer.json; do
        n=$(basename "$(dirname "$f")")
        cp "$f" "$dir/$n"
        cut_to "$f" 2000 "$n.2000"
      done
      for f in models/*/tokenizer.json; do
        [ -f "$f" ] && cut_to "$f" 65536 "$(basename "$(dirname "$f")").head"
      done ;;
    onnx)
      WEBERT_FUZZ_SEEDS=$PWD/$dir cargo test -q --lib onnx::tests::write_fuzz_seeds -- --ignored >/dev/null
      for f in "$dir"/mini-*.onnx; do
        for k in 16 200 1000; do head -c $k "$f" > "$f.$k"; done
      done
      for f in models/pii/onnx/*.onnx target/onnx-dtypes/*.onnx; do
        [ -f "$f" ] && cut_to "$f" 65536 "$(basename "$f").head"
      done ;;
    web_call) ;; # the committed corpus holds one request per task
    head)
      WEBERT_FUZZ_SEEDS=$PWD/$dir cargo test -q --lib head::tests::write_fuzz_seeds -- --ignored >/dev/null
      for f in "$dir"/head-*; do head -c 300 "$f" > "$f.300"; done ;;
  esac
}

max_len() {
  case $1 in
    safetensors) echo 262144 ;;
    onnx | tokenizer | head) echo 65536 ;;
    *) echo 8192 ;;
  esac
}

"${fuzz[@]}" build "${opts[@]}"
for t in "${targets[@]}"; do
  seeds "$t"
  work=target/fuzz-work/$t corpus=tests/fuzz/corpus/$t
  mkdir -p "$work" "$corpus" "tests/fuzz/artifacts/$t"
  echo "== $t: $runs runs"
  status=0
  "${fuzz[@]}" run "${opts[@]}" "$t" "$work" "$corpus" "target/fuzz-seeds/$t" -- \
    -runs="$runs" -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=20 -rss_limit_mb=3072 \
    -print_final_stats=1 > "target/fuzz-work/$t.log" 2>&1 || status=$?
  grep -E '^#[0-9]+ +(INITED|DONE)|stat::number_of_executed_units|ERROR|panicked' "target/fuzz-work/$t.log" || true
  if [ "$status" -ne 0 ]; then
    echo "$t: a finding (exit $status): see target/fuzz-work/$t.log and tests/fuzz/artifacts/$t" >&2
    exit 1
  fi
  small=target/fuzz-work/$t.small merged=target/fuzz-work/$t.merged
  rm -rf "$small" "$merged" && mkdir -p "$small" "$merged"
  find "$work" "$corpus" "target/fuzz-seeds/$t" -type f -size -"$((cap + 1))"c -exec cp -t "$small" {} +
  "$bin/$t" -merge=1 -max_len="$(max_len "$t")" -timeout=20 "$merged" "$small" > "target/fuzz-work/$t.merge.log" 2>&1
  rm -rf "$corpus" && mv "$merged" "$corpus"
  echo "   corpus: $(ls "$corpus" | wc -l) inputs, $(du -sh --apparent-size "$corpus" | cut -f1)"
done
