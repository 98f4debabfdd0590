#!/usr/bin/env python3
"""Real ONNX exports of the tiny seeded DistilBERT, RoBERTa, ELECTRA, MPNet, ALBERT, Jina v2,
DeBERTa-v3 and ModernBERT checkpoints in tests/tiny: torch.onnx's TorchScript exporter (what optimum and transformers.js's
conversion script use), opset 14, dynamic batch and sequence axes, then quantized as
transformers.js does: q8 (`quantize_dynamic`, per-channel, reduce_range, QInt8) and q4
(`MatMulNBits`, block 32, symmetric). Writes tests/onnx-exports/<folder>/onnx/model.onnx,
model_quantized.onnx and model_q4.onnx, and onnxruntime's outputs on those files to
tests/onnx-exports/<folder>/onnx_golden.json, for tests/onnx_exports.rs (which takes config and
tokenizer from tests/tiny/<folder>). Needs torch, transformers, onnx and onnxruntime (/work/pyenv
here); CI only reads the committed outputs.

Classifiers' goldens hold each text's probabilities (`task` `sequence` / `token`; masked-LM
heads as `token`, over the vocabulary; question answering as `span`: start and end
probabilities over the tokens, its export having optimum's two outputs `start_logits` and
`end_logits`). The base models
(mpnet-base-st, jina-v2-base: `task` `hidden`, output `last_hidden_state` as transformers.js's
feature-extraction files) hold each text's `mean_pooled` last hidden state (mean over its tokens),
and its rows (`hidden`) for texts of at most 64 tokens. MPNet and Jina also get a 276-token text
(relative distances past MPNet's 128, ALiBi over long spans). Jina v2 has no transformers class:
its export is scripts/make_tiny_families.py's JinaBertRef (the remote code's JinaBertModel,
eager attention) loaded from the folder's safetensors. ALBERT's shared layer reaches the
quantizers without the exporter's Identity nodes (`without_weight_identities`, as a graph cleaner
such as onnxslim would), so that every layer reads the same quantized weight; quantized with
them, onnxruntime would leave every layer but the first in f32 (webert's importer then keeps the
f32 weights for all layers). DeBERTa-v3 (seqcls, tokcls) is exported as optimum exports
DebertaV2ForSequenceClassification / ForTokenClassification (share_att_key: each layer's key and
query weights also project the LayerNormed relative embeddings, through the same Identity-shared
initializers, removed as for ALBERT). Its q8 goldens also hold `probs_f32_relative`: onnxruntime
on the q8 graph with those projections done in f32 by the dequantized weight (`f32_relative`),
which is webert's arithmetic; onnxruntime's own q8 quantizes the relative embeddings as an
activation (`DynamicQuantizeLinear`).

The first four folders (`CASES`) were written by the first version of this script; rerunning it
(torch 2.15.0, onnx 1.23.2, onnx-ir 1.1.0, onnxruntime 1.32.0) rewrites their .onnx files
byte-identically, and their goldens up to onnxruntime's last digits (~1e-7, machine-dependent).
`--only` picks folders: `--only deberta-v3-seqcls,deberta-v3-tokcls` leaves the others as they
are.
  python scripts/make_tiny_onnx_exports.py [--only a,b] [--out DIR]
"""
import argparse, json, logging, os, sys
import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer
from transformers import (AutoModel, AutoModelForMaskedLM, AutoModelForQuestionAnswering,
                          AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer)

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
# The families of scripts/make_tiny_families.py: folder, class (None: JinaBertRef), the long
# text (its name in make_tiny_families: LONG 276 WordPiece tokens; DeBERTa's Unigram takes
# D_MID, 153 tokens, and D_SHORT, 65, distances well past its 16-position span).
FAMILY_CASES = [
    ('mpnet-seqcls', AutoModelForSequenceClassification, 'LONG'),
    ('mpnet-base-st', AutoModel, 'LONG'),
    ('albert-seqcls', AutoModelForSequenceClassification, None),
    ('jina-v2-base', None, 'LONG'),
    ('deberta-v3-seqcls', AutoModelForSequenceClassification, 'D_MID'),
    ('deberta-v3-tokcls', AutoModelForTokenClassification, 'D_SHORT'),
    ('deberta-v3-mlm', AutoModelForMaskedLM, None),
    ('deberta-v3-qa', AutoModelForQuestionAnswering, 'D_SHORT'),
    ('albert-mlm', AutoModelForMaskedLM, None),
    # scripts/make_tiny_rotary.py's ModernBERT (sdpa attention, as optimum exports it): rotary
    # tables computed in the graph, the sliding window's mask, pre-norm layers; the long text
    # is past the local window (LONG, 618 tokens, where the positions allow it; else MID; the
    # masked LM keeps to the short texts, 25 tokens, past its 17-token window, for a small golden).
    ('modernbert-mlm', AutoModelForMaskedLM, None),
    ('modernbert-seqcls', AutoModelForSequenceClassification, 'LONG'),
    ('modernbert-seqcls-mean', AutoModelForSequenceClassification, 'MID'),
    ('modernbert-tokcls', AutoModelForTokenClassification, 'MID'),
    ('modernbert-qa', AutoModelForQuestionAnswering, 'D_MID'),
    # NomicBERT and GTE as transformers 5 holds them (Q, K, V and the gate and up projections
    # apart, rotary tables computed in the graph), post-norm.
    ('nomic-bert-seqcls', AutoModelForSequenceClassification, 'LONG'),
    ('nomic-bert-mlm', AutoModelForMaskedLM, None),
    ('gte-seqcls', AutoModelForSequenceClassification, 'MID'),
    ('gte-mlm', AutoModelForMaskedLM, None),
    # nomic-embed-text's own graph: the Hub's remote code (NOMIC_REMOTE, --nomic-remote-code),
    # fused Wqkv, its rotary cache built from the traced length, sdpa attention.
    ('nomic-bert-hub', 'nomic-remote', 'LONG'),
    # RoFormer: interleaved rotary pairs whose sinusoidal table is a constant of the graph.
    ('roformer-seqcls', AutoModelForSequenceClassification, 'LONG'),
    ('roformer-mlm', AutoModelForMaskedLM, None),
    ('roformer-tokcls', AutoModelForTokenClassification, 'MID'),
    ('roformer-qa', AutoModelForQuestionAnswering, 'D_MID'),
    ('nomic-bert-tokcls', AutoModelForTokenClassification, 'MID'),
    ('gte-tokcls', AutoModelForTokenClassification, 'MID'),
]
# Also quantized with the exporter's Identity nodes kept (model_int8.onnx, golden dtype `int8`):
# ALBERT's first layer then reads q8 weights and the others f32; DeBERTa's relative embeddings are
# projected by K's / Q's f32 weight while the hidden states meet the q8 one.
WITH_IDENTITIES = ('albert-seqcls', 'deberta-v3-seqcls')
HIDDEN_ROWS = 64  # `hidden` rows are kept for texts up to this many tokens


class Logits(torch.nn.Module):
    """The model called with its inputs by name, returning only the logits."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs):
        return self.model(**dict(zip(self.names, inputs))).logits


class Span(Logits):
    """The model called with its inputs by name, returning start and end logits (as optimum's
    question-answering export)."""

    def forward(self, *inputs):
        out = self.model(**dict(zip(self.names, inputs)))
        return out.start_logits, out.end_logits


class Hidden(Logits):
    """The model called with its inputs by name, returning only the last hidden state."""

    def forward(self, *inputs):
        return self.model(**dict(zip(self.names, inputs))).last_hidden_state


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def without_weight_identities(model):
    """The model with `Identity(initializer)` nodes removed, their readers reading the initializer.
    torch.onnx shares a parameter used by several modules (ALBERT's one layer, run num_hidden_layers
    times) through such Identity nodes; onnxruntime's quantizers only quantize initializers that a
    node reads directly, so without this the first layer would come out quantized and the others
    f32. Graph cleaners such as onnxslim remove them the same way."""
    inits = {t.name for t in model.graph.initializer}
    alias = {n.output[0]: n.input[0] for n in model.graph.node if n.op_type == 'Identity' and n.input[0] in inits}
    keep = [n for n in model.graph.node if not (n.op_type == 'Identity' and n.output[0] in alias)]
    for n in keep:
        n.input[:] = [alias.get(i, i) for i in n.input]
    del model.graph.node[:]
    model.graph.node.extend(keep)
    return model, len(alias)


def f32_relative(model):
    """The q8 `model` with the projections of DeBERTa's relative embeddings (the `MatMulInteger`s
    of a `DynamicQuantizeLinear` of a value computed from constants only) done in f32 by the
    dequantized weight: what webert computes (it projects the relative embeddings once, at
    load). `probs_f32_relative` in the golden; `probs` holds onnxruntime's own q8 arithmetic,
    which quantizes the relative embeddings as an activation."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    users = {}
    for n in g.node:
        for i in n.input:
            users.setdefault(i, []).append(n)
    live, frontier = set(), [i.name for i in g.input]
    while frontier:
        t = frontier.pop()
        if t not in live:
            live.add(t)
            frontier += [o for n in users.get(t, []) for o in n.output]
    producer = {o: n for n in g.node for o in n.output}
    added = []
    for n in list(g.node):
        q = producer.get(n.input[0]) if n.op_type == 'MatMulInteger' else None
        if q is None or q.op_type != 'DynamicQuantizeLinear' or q.input[0] in live:
            continue
        w = onnx.numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
        scale = onnx.numpy_helper.to_array(inits[n.input[1].replace('_quantized', '_scale')])
        zero = onnx.numpy_helper.to_array(inits[n.input[3]]).astype(np.float32)
        (cast,) = users[n.output[0]]
        (mul,) = users[cast.output[0]]
        name = f'{n.output[0]}_f32'
        g.initializer.append(onnx.numpy_helper.from_array(((w - zero) * scale).astype(np.float32), name + '_weight'))
        added.append(onnx.helper.make_node('MatMul', [q.input[0], name + '_weight'], [name]))
        for u in users[mul.output[0]]:
            u.input[:] = [name if i == mul.output[0] else i for i in u.input]
    assert added, 'no projection of the relative embeddings'
    g.node.extend(added)
    return model


def export_all(module, example, names, output, axes, out, shared=False, identities=False):
    """model.onnx by the TorchScript exporter, then model_quantized.onnx (q8) and model_q4.onnx.
    With `shared`, the quantizers get the model without_weight_identities (model.onnx keeps them);
    with `identities` also, model_int8.onnx is q8 of model.onnx as the exporter wrote it (Identity
    nodes kept: the weights read through them stay f32)."""
    fp32 = os.path.join(out, 'model.onnx')
    torch.onnx.export(module, example, fp32, input_names=names,
                      output_names=output if isinstance(output, list) else [output], dynamic_axes=axes, opset_version=14, do_constant_folding=True,
                      dynamo=False)
    source = fp32
    if shared:
        model, n = without_weight_identities(onnx.load(fp32))
        if n:
            source = os.path.join(out, 'model_shared.tmp.onnx')
            onnx.save(model, source)
    quantize_dynamic(source, os.path.join(out, 'model_quantized.onnx'), per_channel=True, reduce_range=True,
                     weight_type=QuantType.QInt8)
    if identities:
        quantize_dynamic(fp32, os.path.join(out, 'model_int8.onnx'), per_channel=True, reduce_range=True,
                         weight_type=QuantType.QInt8)
    q4 = MatMulNBitsQuantizer(onnx.load(source), algo_config=DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True))
    q4.process()
    onnx.save(q4.model.model, os.path.join(out, 'model_q4.onnx'))
    if source != fp32:
        os.remove(source)


DTYPES = (('fp32', 'model.onnx'), ('q8', 'model_quantized.onnx'), ('q4', 'model_q4.onnx'))


def main_case(name, cls, root):
    folder = os.path.join(ROOT, name)
    exports = os.path.join(root, name)
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
    export_all(Logits(model, names), tuple(first[n] for n in names), names, 'logits', axes, out)
    golden = {'exporter': f'torch {torch.__version__} onnx TorchScript opset 14', 'onnxruntime': ort.__version__,
              'task': 'token' if cls is AutoModelForTokenClassification else 'sequence', 'dtypes': {}}
    for dtype, file in DTYPES:
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


def r8(values):
    """Floats to 8 significant digits (f32 precision, shorter JSON)."""
    return [float(f'{v:.8g}') for v in np.asarray(values, dtype=np.float64).ravel().tolist()]


def nomic_remote_model(folder, code_dir):
    """NomicBertModel of the Hub's remote code (modeling_hf_nomic_bert.py and
    configuration_hf_nomic_bert.py in `code_dir`, e.g. nomic-ai/contrastors'
    src/contrastors/models/huggingface/) with the folder's config.json and weights."""
    import importlib, shutil, tempfile
    from safetensors.torch import load_file
    if not code_dir:
        sys.exit('nomic-bert-hub needs --nomic-remote-code DIR (the remote code\'s two .py files)')
    pkg = tempfile.mkdtemp()
    os.makedirs(os.path.join(pkg, 'nomic_remote'))
    for f in ('modeling_hf_nomic_bert.py', 'configuration_hf_nomic_bert.py'):
        shutil.copy(os.path.join(code_dir, f), os.path.join(pkg, 'nomic_remote', f))
    open(os.path.join(pkg, 'nomic_remote', '__init__.py'), 'w').close()
    sys.path.insert(0, pkg)
    modeling = importlib.import_module('nomic_remote.modeling_hf_nomic_bert')
    configuration = importlib.import_module('nomic_remote.configuration_hf_nomic_bert')
    # The remote code rounds the MLP's width up to a multiple of 256 (nomic-embed-text's 3072
    # is one; the tiny 64 is not): multiple_of 1, the graph otherwise as the code builds it.
    mlp = modeling.NomciBertGatedMLP.__init__
    names = mlp.__code__.co_varnames[1:mlp.__code__.co_argcount]
    defaults = list(mlp.__defaults__)
    defaults[names.index('multiple_of') - (len(names) - len(defaults))] = 1
    mlp.__defaults__ = tuple(defaults)
    if not hasattr(modeling.NomicBertModel, 'get_extended_attention_mask'):
        # transformers 4's, which the remote code was written for (5 dropped it)
        def extended(self, mask, shape):
            mask = mask[:, None, None, :].to(torch.float32)
            return (1.0 - mask) * torch.finfo(torch.float32).min
        modeling.NomicBertModel.get_extended_attention_mask = extended
    with open(os.path.join(folder, 'config.json')) as f:
        cfg = json.load(f)
    for k in ('auto_map', 'architectures', 'model_type', 'transformers_version', 'torch_dtype'):
        cfg.pop(k, None)
    cfg['pad_vocab_size_multiple'] = 1  # the tiny vocabulary is no multiple of 64
    model = modeling.NomicBertModel(configuration.NomicBertConfig(**cfg), add_pooling_layer=False)
    state = load_file(os.path.join(folder, 'model.safetensors'))
    result = model.load_state_dict(state, strict=False)
    assert not result.missing_keys and not result.unexpected_keys, result
    return model.eval()


def family_case(name, cls, long_text, root, nomic_code=None):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_tiny_families as fam  # JinaBertRef and the long text; sets single-threaded torch
    from safetensors.torch import load_file
    folder = os.path.join(ROOT, name)
    exports = os.path.join(root, name)
    out = os.path.join(exports, 'onnx')
    os.makedirs(out, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(folder)
    if cls == 'nomic-remote':
        model, cls = nomic_remote_model(folder, nomic_code), AutoModel
    elif cls is None:
        with open(os.path.join(folder, 'config.json')) as f:
            model = fam.JinaBertRef(fam.JinaCfg(**json.load(f)))
        model.load_state_dict(load_file(os.path.join(folder, 'model.safetensors')), strict=True)
        model.eval()
    else:
        model = cls.from_pretrained(folder, dtype=torch.float32).eval()
    texts = TEXTS + ([getattr(fam, long_text)] if long_text else [])
    first = tok(TEXTS[0], return_tensors='pt')
    names = [n for n in ('input_ids', 'attention_mask', 'token_type_ids') if n in first]
    axes = {n: {0: 'batch_size', 1: 'sequence_length'} for n in names}
    hidden = cls is None or cls is AutoModel
    span = cls is AutoModelForQuestionAnswering
    output = 'last_hidden_state' if hidden else ['start_logits', 'end_logits'] if span else 'logits'
    token = cls in (AutoModelForTokenClassification, AutoModelForMaskedLM)
    for o in output if span else [output]:
        axes[o] = {0: 'batch_size', 1: 'sequence_length'} if hidden or token or span else {0: 'batch_size'}
    wrap = Hidden if hidden else Span if span else Logits
    with torch.no_grad():
        export_all(wrap(model, names), tuple(first[n] for n in names), names, output, axes, out, shared=True,
                   identities=name in WITH_IDENTITIES)
    golden = {'exporter': f'torch {torch.__version__} onnx TorchScript opset 14', 'onnxruntime': ort.__version__,
              'task': 'hidden' if hidden else 'token' if token else 'span' if span else 'sequence', 'dtypes': {}}
    def probs(y):
        return [r8(p) for p in softmax(y.astype(np.float64))] if token else r8(softmax(y.astype(np.float64)))

    def outputs(s, feed):
        """The first output of the first text; for a span, start and end probabilities over the tokens."""
        ys = s.run(None, feed)
        return {'start': r8(softmax(ys[0][0].astype(np.float64))), 'end': r8(softmax(ys[1][0].astype(np.float64)))} \
            if span else ys[0][0]

    dtypes = DTYPES + ((('int8', 'model_int8.onnx'),) if name in WITH_IDENTITIES else ())
    for dtype, file in dtypes:
        sess = ort.InferenceSession(os.path.join(out, file), providers=['CPUExecutionProvider'])
        # DeBERTa's q8 also by the graph with its relative embeddings projected in f32
        rel = None
        if dtype == 'q8' and model.config.model_type == 'deberta-v2':
            rel = ort.InferenceSession(f32_relative(onnx.load(os.path.join(out, file))).SerializeToString(),
                                       providers=['CPUExecutionProvider'])
        rows = []
        for text in texts:
            enc = tok(text, return_tensors='np')
            feed = {i.name: enc[i.name].astype(np.int64) for i in sess.get_inputs()}
            y = outputs(sess, feed)
            row = {'text': text, 'input_ids': enc['input_ids'][0].tolist()}
            if hidden:
                row['mean_pooled'] = r8(y.astype(np.float64).mean(0))
                if len(y) <= HIDDEN_ROWS:
                    row['hidden'] = [r8(v) for v in y]
            else:
                row['probs'] = y if span else probs(y)
            if rel is not None:
                y = outputs(rel, feed)
                row['probs_f32_relative'] = y if span else probs(y)
            rows.append(row)
        golden['dtypes'][dtype] = rows
    with open(os.path.join(exports, 'onnx_golden.json'), 'w') as f:
        json.dump(golden, f, separators=(',', ':'))
        f.write('\n')
    print(name, 'written', {f: os.path.getsize(os.path.join(out, f)) for _, f in dtypes})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--only', default='', help='comma-separated folder names (default: all)')
    ap.add_argument('--out', default=os.path.join(TESTS, 'onnx-exports'))
    ap.add_argument('--nomic-remote-code', default=os.environ.get('NOMIC_REMOTE'),
                    help="folder with the Hub's modeling_hf_nomic_bert.py / configuration_hf_nomic_bert.py")
    args = ap.parse_args()
    only = [s for s in args.only.split(',') if s]
    torch.manual_seed(0)
    for name, cls in CASES:
        if not only or name in only:
            main_case(name, cls, args.out)
    for name, cls, long_text in FAMILY_CASES:
        if not only or name in only:
            family_case(name, cls, long_text, args.out, args.nomic_remote_code)


if __name__ == '__main__':
    main()
