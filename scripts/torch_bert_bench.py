"""PyTorch CUDA timings of randomly initialised BERT shapes (the peer of `webert bench
--shape`): median ms of 30 forwards after warm-up (CUDA events), seq 128, batch 1 and 32,
fp32 with TF32 off and fp16, eager and replayed as a CUDA graph. Achieved TFLOP/s are printed
beside each row with the same FLOP count as `webert bench` (linears + attention matmuls).
Run on the lent GPU machine by scripts/h200_bench.sh; tested with torch 2.11, transformers 4.5x.
Exits 0 with a message when torch, transformers or CUDA is missing."""
import sys

try:
    import torch
    from transformers import BertConfig, BertModel
except Exception as e:  # noqa: BLE001 - any import failure means: no peer on this machine
    print(f"pytorch: skipped ({type(e).__name__}: {e})")
    sys.exit(0)
if not torch.cuda.is_available():
    print("pytorch: skipped (no CUDA device)")
    sys.exit(0)

SHAPES = {
    "bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "minilm-l6": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536),
}
SEQ = 128
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def flops(shape, batch):
    h, i, l = shape["hidden_size"], shape["intermediate_size"], shape["num_hidden_layers"]
    return 2 * batch * SEQ * l * (4 * h * h + 2 * h * i) + l * 4 * batch * SEQ * SEQ * h


def median_ms(fn, runs=30, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def graphed(model, ids, mask):
    """The forward captured once as a CUDA graph, replayed on the same static inputs."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            model(input_ids=ids, attention_mask=mask)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model(input_ids=ids, attention_mask=mask)
    return graph.replay


print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, TF32 off")
with torch.inference_mode():
    for name, shape in SHAPES.items():
        base = BertModel(BertConfig(**shape), add_pooling_layer=False).cuda().eval()
        for dtype in (torch.float32, torch.float16):
            model = base.to(dtype)
            for batch in (1, 32):
                ids = torch.randint(1000, 20000, (batch, SEQ), device="cuda")
                mask = torch.ones_like(ids)
                for mode in ("eager", "cuda-graph"):
                    try:
                        fn = (lambda: model(input_ids=ids, attention_mask=mask)) if mode == "eager" else graphed(model, ids, mask)
                        ms = median_ms(fn)
                        tf = flops(shape, batch) / (ms * 1e9)
                        print(f"pytorch {name} {str(dtype)[6:]} batch {batch} seq {SEQ} {mode}: {ms:.2f} ms, {tf:.1f} TFLOP/s", flush=True)
                    except Exception as e:  # noqa: BLE001 - report and go on to the next row
                        print(f"pytorch {name} {str(dtype)[6:]} batch {batch} {mode}: failed ({type(e).__name__}: {e})", flush=True)
