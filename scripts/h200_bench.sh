#!/usr/bin/env bash
# On the lent GPU machine (see scripts/h200_prepare.sh): webert's wgpu executor through Vulkan
# and PyTorch eager CUDA on the same bert-base shapes (random weights), in one run. Prints both.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES=$icd
export XDG_RUNTIME_DIR=/tmp
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader || true
B=.devbin/webert
for shape in bert-base minilm-l6; do
  for batch in 1 32; do
    echo "== webert $shape batch $batch seq 128 (gpu)"
    timeout 120 "$B" bench --model .devbin/minilm --shape "$shape" --backend gpu --batch "$batch" --seq-len 128 --runs 30 --warmup 5
  done
done
# Low-bit weights kept packed on the GPU (q4, q8 integer and f32), and dequantized for comparison.
for quant in q4 q8; do
  for weights in packed dequant; do
    for batch in 1 32; do
      echo "== webert bert-base $quant $weights batch $batch seq 128 (gpu)"
      WEBERT_GPU_WEIGHTS=$weights timeout 120 "$B" bench --model .devbin/minilm --shape bert-base --quant $quant --backend gpu --batch "$batch" --seq-len 128 --runs 30 --warmup 5
    done
  done
done
echo "== webert bert-base q8 packed, f32 GEMM batch 1 (gpu)"
WEBERT_GPU_Q8=float timeout 120 "$B" bench --model .devbin/minilm --shape bert-base --quant q8 --backend gpu --batch 1 --seq-len 128 --runs 30 --warmup 5
echo "== PyTorch eager"
PYTHONUNBUFFERED=1 timeout 240 python3 scripts/torch_bert_bench.py
