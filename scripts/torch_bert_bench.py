"""PyTorch eager CUDA timings of randomly initialised BERT shapes (the peer of `webert bench
--shape`): median ms of 30 forwards after warm-up, CUDA events, fp32 and fp16, seq 128."""
import torch
from transformers import BertConfig, BertModel

SHAPES = {
    "bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "minilm-l6": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536),
}


def median_ms(model, ids, mask, runs=30, warmup=5):
    with torch.inference_mode():
        for _ in range(warmup):
            model(input_ids=ids, attention_mask=mask)
        torch.cuda.synchronize()
        times = []
        for _ in range(runs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(input_ids=ids, attention_mask=mask)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
for name, shape in SHAPES.items():
    model = BertModel(BertConfig(**shape), add_pooling_layer=False).cuda().eval()
    for dtype in (torch.float32, torch.float16):
        model = model.to(dtype)
        for batch in (1, 32):
            ids = torch.randint(1000, 20000, (batch, 128), device="cuda")
            mask = torch.ones_like(ids)
            ms = median_ms(model, ids, mask)
            print(f"pytorch {name} {str(dtype)[6:]} batch {batch} seq 128: {ms:.2f} ms")
