#!/usr/bin/env python3
"""Real ONNX exports of the tiny seeded DistilBERT, RoBERTa and ELECTRA checkpoints in tests/tiny:
torch.onnx's TorchScript exporter (what optimum and transformers.js's conversion script use),
opset 14, dynamic batch and sequence axes, then quantized as transformers.js does: q8
(`quantize_dynamic`, per-channel, reduce_range, QInt8) and q4 (`MatMulNBits`, block 32,
symmetric). Writes tests/onnx-exports/<folder>/onnx/model.onnx, model_quantized.onnx and
model_q4.onnx, and onnxruntime's probabilities on those files to
tests/onnx-exports/<folder>/onnx_golden.json, for tests/onnx_exports.rs (which takes config and
tokenizer from tests/tiny/<folder>). Needs torch, transformers and onnxruntime (/work/pyenv here); CI only
reads the committed outputs.
  python scripts/make_tiny_onnx_exports.py
"""
import json, logging, os
import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer
from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer

logging.disable(logging.INFO)
TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests')
ROOT = os.path.join(TESTS, 'tiny')
TEXTS = ['The quick brown fox jumps over the lazy dog.', 'Hello world, this is webert.', 'A']
CASES = [
    ('distilbert-seqcls', AutoModelForSequenceClassification),
    ('roberta-seqcls', AutoModelForSequenceClassification),
    ('roberta-tokcls', AutoModelForTokenClassification),
    ('electra-seqcls', AutoModelForSequenceClassification),
]


class Logits(torch.nn.Module):
    """The model called with its inputs by name, returning only the logits."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs):
        return self.model(**dict(zip(self.names, inputs))).logits


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def main():
    torch.manual_seed(0)
    for name, cls in CASES:
        folder = os.path.join(ROOT, name)
        exports = os.path.join(TESTS, 'onnx-exports', name)
        out = os.path.join(exports, 'onnx')
        os.makedirs(out, exist_ok=True)
        model = cls.from_pretrained(folder).eval()
        tok = AutoTokenizer.from_pretrained(folder)
        first = tok(TEXTS[0], return_tensors='pt')
        names = [n for n in ('input_ids', 'attention_mask', 'token_type_ids') if n in first]
        if model.config.model_type == 'distilbert':
            names = names[:2]
        axes = {n: {0: 'batch_size', 1: 'sequence_length'} for n in names}
        axes['logits'] = {0: 'batch_size', 1: 'sequence_length'} if cls is AutoModelForTokenClassification else {0: 'batch_size'}
        fp32 = os.path.join(out, 'model.onnx')
        torch.onnx.export(Logits(model, names), tuple(first[n] for n in names), fp32, input_names=names,
                          output_names=['logits'], dynamic_axes=axes, opset_version=14, do_constant_folding=True,
                          dynamo=False)
        quantize_dynamic(fp32, os.path.join(out, 'model_quantized.onnx'), per_channel=True, reduce_range=True,
                         weight_type=QuantType.QInt8)
        q4 = MatMulNBitsQuantizer(onnx.load(fp32), algo_config=DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True))
        q4.process()
        onnx.save(q4.model.model, os.path.join(out, 'model_q4.onnx'))
        golden = {'exporter': f'torch {torch.__version__} onnx TorchScript opset 14', 'onnxruntime': ort.__version__,
                  'task': 'token' if cls is AutoModelForTokenClassification else 'sequence', 'dtypes': {}}
        for dtype, file in (('fp32', 'model.onnx'), ('q8', 'model_quantized.onnx'), ('q4', 'model_q4.onnx')):
            sess = ort.InferenceSession(os.path.join(out, file), providers=['CPUExecutionProvider'])
            rows = []
            for text in TEXTS:
                enc = tok(text, return_tensors='np')
                logits = sess.run(None, {i.name: enc[i.name].astype(np.int64) for i in sess.get_inputs()})[0][0]
                rows.append({'text': text, 'input_ids': enc['input_ids'][0].tolist(),
                             'probs': softmax(logits.astype(np.float64)).tolist()})
            golden['dtypes'][dtype] = rows
        with open(os.path.join(exports, 'onnx_golden.json'), 'w') as f:
            json.dump(golden, f, indent=1)
        print(name, 'written')


if __name__ == '__main__':
    main()
