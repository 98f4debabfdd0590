#!/usr/bin/env bash
# On the lent GPU machine (prepared by scripts/h200_prepare.sh; one `run` call of at most 9
# minutes, carry [".devbin", ".gl"]): webert's wgpu executor through Vulkan on bert-base and
# MiniLM-L6 shapes (random weights), batch 1 and 32 x 128 tokens, every kernel variant, then
# PyTorch (eager and CUDA graph, fp32 with TF32 off and fp16) on the same shapes. Each webert
# row is one JSON line: median/min ms, the tiling of every GEMM (`gpu_gemms`), GPU ms per
# kernel (timestamps), encoder TFLOP/s and weight GB/s, and the GPU's distance from the CPU on the
# first window (`cpu_parity`: cosine, largest difference); ModernBERT-base's shape at 512, 2048
# and 8192 tokens (long inputs); PyTorch rows print ms and TFLOP/s.
#
# H200_DRY=1 runs the same rows here, on whatever adapter there is (lavapipe), at toy sizes
# (MiniLM shape, 16 tokens, batch 1 and 2, 2 runs): it checks the script, the CLI's variables
# and the summary before device time is spent on them.
set -u
start=$SECONDS
# Under the device tool everything the run prints also goes to $OUT, which comes back whole
# even when the run is stopped at its limit (the reply keeps only the last 12,000 characters).
out=${OUT:-/tmp}
log=$out/h200_webert.log
: >"$log"
[ -n "${OUT:-}" ] && exec > >(tee "$OUT/h200_all.log") 2>&1
if [ -n "${H200_DRY:-}" ]; then
  shapes="minilm-l6" qshape=minilm-l6 batches="1 2" seq=16 runs=2 warmup=1 qruns=2
else
  shapes="bert-base minilm-l6" qshape=bert-base batches="1 32" seq=128 runs=30 warmup=5 qruns=10
fi
if [ -z "${H200_DRY:-}" ]; then
  for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
  ldconfig 2>/dev/null
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
# The NVIDIA Vulkan driver: its ICD file where the container has one, else one written for
# the driver library the container mounts.
icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
  /etc/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1)
if [ -z "$icd" ] && [ -z "${H200_DRY:-}" ]; then
  lib=$(ldconfig -p | awk '/libGLX_nvidia.so.0/ {print $NF; exit}')
  [ -z "$lib" ] && lib=$(find / -xdev -name 'libGLX_nvidia.so.0' 2>/dev/null | head -1)
  if [ -n "$lib" ]; then
    icd=/tmp/nvidia_icd.json
    printf '{"file_format_version":"1.0.0","ICD":{"library_path":"%s","api_version":"1.3"}}\n' "$lib" >"$icd"
  fi
fi
[ -n "$icd" ] && export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
# Vulkan only: without a Vulkan driver wgpu would otherwise take NVIDIA's OpenGL ES through EGL,
# which has none of the features measured here.
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
echo "vulkan icd: ${icd:-none found (webert rows will fail: no NVIDIA Vulkan driver in this container)}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader || true
echo "peaks (H200 SXM, datasheet): fp32 67 TFLOP/s, fp16 tensor 989 TFLOP/s dense, HBM3e 4.8 TB/s"

B=.devbin/webert
tok=.devbin/minilm
[ -x "$B" ] || B=target/release/webert
[ -f "$tok/tokenizer.json" ] || tok=models/minilm
"$B" --version || { echo "no webert binary (run scripts/h200_prepare.sh and carry .devbin)"; }
# name | WEBERT_GPU_F16 | WEBERT_GPU_SUBGROUPS | WEBERT_GPU_COOP | WEBERT_GPU_TILE | WEBERT_GPU_TUNE
# (unset: tilings timed per shape, `gpu_gemm_timings` lists every candidate's GPU ms; 0: the rule)
variants=(
  "f32|off||||"
  "f32-rule|off||||0"
  "f32-tile64|off|||64|"
  "f32-nosubgroups|off|0|||"
  "f16-storage|storage||0||"
  "f16-compute|compute||0||"
  "f16-compute-rule|compute||0||0"
  "f16-coop|compute||1||"
)
for shape in $shapes; do
  for batch in $batches; do
    for v in "${variants[@]}"; do
      IFS='|' read -r name f16 sg coop tile tune <<<"$v"
      if (( SECONDS - start > 330 )); then
        echo "== webert $shape b$batch $name: skipped (time kept for PyTorch)"
        continue
      fi
      echo "== webert $shape batch $batch seq $seq $name" | tee -a "$log"
      WEBERT_GPU_F16=$f16 WEBERT_GPU_SUBGROUPS=$sg WEBERT_GPU_COOP=$coop WEBERT_GPU_TILE=$tile WEBERT_GPU_TUNE=$tune \
        timeout 60 "$B" bench --model "$tok" --shape "$shape" --backend gpu \
        --batch "$batch" --seq-len $seq --runs $runs --warmup $warmup 2>&1 | tail -3 | tee -a "$log"
    done
  done
done
# Low-bit weights kept packed on the GPU (q4; q8 integer) against their dequantized upload.
for quant in q4 q8; do
  for weights in packed dequant; do
    for batch in $batches; do
      if (( SECONDS - start > 400 )); then
        echo "== webert $qshape $quant $weights b$batch: skipped (time kept for PyTorch)"
        continue
      fi
      echo "== webert $qshape $quant $weights batch $batch seq $seq" | tee -a "$log"
      WEBERT_GPU_WEIGHTS=$weights timeout 60 "$B" bench --model "$tok" --shape $qshape --quant $quant \
        --backend gpu --batch "$batch" --seq-len $seq --runs $runs --warmup $warmup 2>&1 | tail -3 | tee -a "$log"
    done
  done
done
if (( SECONDS - start <= 400 )); then
  echo "== webert $qshape q8 packed, f32 GEMM, batch 1 seq $seq" | tee -a "$log"
  WEBERT_GPU_WEIGHTS=packed WEBERT_GPU_Q8=float timeout 60 "$B" bench --model "$tok" --shape $qshape --quant q8 --backend gpu \
    --batch 1 --seq-len $seq --runs $runs --warmup $warmup 2>&1 | tail -3 | tee -a "$log"
fi
# Tilings saved by one run and restored by the next (WEBERT_GPU_TILINGS): first_ms without timing.
if (( SECONDS - start <= 420 )); then
  tilings=$out/h200_tilings.json
  rm -f "$tilings"
  for run in timed restored; do
    echo "== webert $qshape batch 1 seq $seq f16-compute, tilings $run" | tee -a "$log"
    WEBERT_GPU_F16=compute WEBERT_GPU_COOP=0 WEBERT_GPU_TUNE=1 WEBERT_GPU_TILINGS="$tilings" timeout 60 "$B" bench \
      --model "$tok" --shape $qshape --backend gpu --batch 1 --seq-len $seq --runs $qruns --warmup 2 2>&1 | tail -3 | tee -a "$log"
  done
fi
# Long inputs (docs/performance.md, Long inputs): ModernBERT-base's config (tests/bench), seeded
# weights, one sequence of 512, 2048 and 8192 tokens; 8 global layers, 14 windowed.
long_lengths="512 2048 8192"
[ -n "${H200_DRY:-}" ] && long_lengths=64
for n in $long_lengths; do
  if (( SECONDS - start > 450 )); then
    echo "== webert modernbert-base $n tokens: skipped (time kept for PyTorch)"
    continue
  fi
  echo "== webert modernbert-base batch 1 seq $n f16-compute" | tee -a "$log"
  WEBERT_GPU_F16=compute WEBERT_GPU_COOP=0 timeout 60 "$B" bench --model tests/bench/modernbert-base \
    --shape config --backend gpu --batch 1 --seq-len "$n" --runs 3 --warmup 1 2>&1 | tail -3 | tee -a "$log"
done
echo "== webert done after $((SECONDS - start)) s"
echo "== summary (scripts/h200_summary.py)"
python3 scripts/h200_summary.py <"$log" || true
[ -n "${H200_DRY:-}" ] && exit 0
echo "== PyTorch"
PYTHONUNBUFFERED=1 timeout $((500 - (SECONDS - start))) python3 scripts/torch_bert_bench.py
echo "== all done after $((SECONDS - start)) s"
