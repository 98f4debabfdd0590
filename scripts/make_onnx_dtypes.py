#!/usr/bin/env python3
"""Builds every ONNX dtype transformers.js ships, from the committed real weights, without torch.

Pinned (scripts/onnx_dtypes_requirements.txt): onnx==1.23.2, onnxruntime==1.32.0, numpy==2.4.6,
safetensors==0.8.0; goldens also need tokenizers (any version that reads tokenizer.json).

fp32 graph: written with the onnx package in the layout optimum's (TorchScript) exporter gives
BERT models for transformers.js: opset 18, `LayerNormalization`, erf GELU, Q and K each scaled by
sqrt(1/sqrt(d)), biases / LayerNorms / embedding tables named by their state-dict names, MatMul
weights as anonymous `onnx::MatMul_N` [in, out], node names `/bert/encoder/layer.0/...`. The
sentence-transformers variant prefixes everything with `0.auto_model.` / `/0/auto_model/` and
decomposes LayerNorm (ReduceMean/Sub/Pow/Sqrt/Div/Mul/Add, as opset-14 exports do).

Dtypes, as transformers.js's scripts/quantize.py makes them from that fp32 file:
  q8 (model_quantized): ONNXQuantizer IntegerOps, per_channel + reduce_range, QInt8 weights
  int8 / uint8: the same with QInt8 / QUInt8 weights
  q4: MatMulNBitsQuantizer block 32, symmetric;  q4f16: q4 then the float16 converter
  fp16: float16 converter, keep_io_types   bnb4: MatMulBnb4Quantizer NF4 block 64 (and FP4)
  (float16 converter: onnxruntime.transformers.float16, the converter transformers.js's copy
  derives from; its copy needs onnxslim and changes nothing for these graphs)
plus weight-only exports: int8 initializer -> Cast -> Mul(scale) -> MatMul / Gather (`wo_int8`)
and int8 initializer -> DequantizeLinear (`wo_dq`).

Usage:
  python scripts/make_onnx_dtypes.py [--out DIR]            # the .onnx files (CI set-up)
  python scripts/make_onnx_dtypes.py --goldens              # + tests/golden/onnx_dtypes.json
DIR defaults to $WEBERT_ONNX_DTYPES or target/onnx-dtypes. Existing files are kept when
their checksum matches the golden's.
"""
import argparse
import json
import os
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = pathlib.Path(os.environ.get("WEBERT_MODELS", ROOT / "models"))
GOLDEN = ROOT / "tests/golden/onnx_dtypes.json"
OPSET = 18

TEXTS = {
    "minilm": [
        "The quick brown fox jumps over the lazy dog.",
        "Quantized encoders should give the same embeddings as onnxruntime.",
        "Paris is the capital of France.",
    ],
    "pii": [
        "My name is Sarah Johnson and my email is sarah.johnson@example.com.",
        "Call John Smith at 415-555-0132 about account 12345678.",
        "Ship it to 221B Baker Street, London, before Friday.",
    ],
    "seqcls": [
        "I loved this film, the acting was wonderful.",
        "The service was slow and the food was cold.",
    ],
}


# ---- weights ---------------------------------------------------------------------------------

def minilm_state():
    from safetensors.numpy import load_file
    sd = load_file(str(MODELS / "minilm/model.safetensors"))
    return {k: v.astype(np.float32) for k, v in sd.items() if not k.endswith("position_ids")}


def seqcls_state():
    from safetensors.numpy import load_file
    sd = minilm_state()
    sd.update(load_file(str(ROOT / "tests/heads/seqcls/head.safetensors")))
    return sd


def pii_state():
    """The shipped q4 model's weights, dequantized exactly (MatMulNBits, Gather+DequantizeLinear)."""
    m = onnx.load(str(MODELS / "pii/onnx/model_q4.onnx"))
    g = m.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    users = {}
    for n in g.node:
        for x in n.input:
            users.setdefault(x, []).append(n)
    out = {}
    for n in g.node:
        if n.op_type == "MatMulNBits":
            a = {x.name: helper.get_attribute_value(x) for x in n.attribute}
            k, nn, bs = a["K"], a["N"], a["block_size"]
            blocks = (k + bs - 1) // bs
            q = inits[n.input[1]].reshape(nn, blocks, bs // 2)
            q = np.stack([q & 15, q >> 4], -1).reshape(nn, blocks, bs).astype(np.float32)
            s = inits[n.input[2]].reshape(nn, blocks, 1).astype(np.float32)
            w = ((q - 8.0) * s).reshape(nn, blocks * bs)[:, :k]
            bias = [u for u in users[n.output[0]] if u.op_type == "Add"][0]
            bname = [x for x in bias.input if x in inits][0]
            out[bname[: -len(".bias")] + ".weight"] = w
        elif n.op_type == "DequantizeLinear" and n.input[0] not in inits:
            gather = [p for p in g.node if n.input[0] in p.output][0]
            src = gather.input[0]
            scale = inits[n.input[1]].astype(np.float32)
            zp = inits[n.input[2]].astype(np.float32)
            out[src.replace("_quantized", "")] = (inits[src].astype(np.float32) - zp) * scale
    for k, v in inits.items():
        if v.dtype == np.float32 and k.endswith((".weight", ".bias")) and k not in out:
            out[k] = v
    return {k[len("bert."):] if k.startswith("bert.") else k: v for k, v in out.items()}


# ---- fp32 graph ------------------------------------------------------------------------------

class G:
    def __init__(self, scope, init_prefix, decomposed_ln):
        self.nodes, self.inits, self.n = [], [], 0
        self.scope, self.ip, self.decomposed = scope, init_prefix, decomposed_ln
        self.mm = 100

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr).copy(order="C"), name))
        return name

    def const(self, arr, dtype=np.int64):
        self.n += 1
        return self.init(f"const_{self.n}", np.asarray(arr, dtype=dtype))

    def node(self, op, inputs, path, **attrs):
        name = f"{self.scope}/{path}" if path else f"{self.scope}/{op}_{len(self.nodes)}"
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def linear(self, x, sd, key, path):
        self.mm += 1
        w = self.init(f"onnx::MatMul_{self.mm}", sd[key + ".weight"].T)
        b = self.init(self.ip + key + ".bias", sd[key + ".bias"])
        y = self.node("MatMul", [x, w], f"{path}/MatMul")
        return self.node("Add", [b, y], f"{path}/Add")

    def layer_norm(self, x, sd, key, path, eps):
        gamma = self.init(self.ip + key + ".weight", sd[key + ".weight"])
        beta = self.init(self.ip + key + ".bias", sd[key + ".bias"])
        if not self.decomposed:
            return self.node("LayerNormalization", [x, gamma, beta], f"{path}/LayerNormalization",
                             axis=-1, epsilon=eps)
        axes = self.const([-1])
        mean = self.node("ReduceMean", [x, axes], f"{path}/ReduceMean")
        d = self.node("Sub", [x, mean], f"{path}/Sub")
        sq = self.node("Pow", [d, self.const(2.0, np.float32)], f"{path}/Pow")
        var = self.node("ReduceMean", [sq, axes], f"{path}/ReduceMean_1")
        std = self.node("Sqrt", [self.node("Add", [var, self.const(eps, np.float32)], f"{path}/Add")],
                        f"{path}/Sqrt")
        y = self.node("Div", [d, std], f"{path}/Div")
        y = self.node("Mul", [y, gamma], f"{path}/Mul")
        return self.node("Add", [y, beta], f"{path}/Add_1")


def build_fp32(sd, cfg, head, scope="/bert", init_prefix="bert.", decomposed_ln=False):
    g = G(scope, init_prefix, decomposed_ln)
    h, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    d = h // heads
    ip = init_prefix
    ids, mask, tt = "input_ids", "attention_mask", "token_type_ids"
    word = g.init(ip + "embeddings.word_embeddings.weight", sd["embeddings.word_embeddings.weight"])
    pos = g.init(ip + "embeddings.position_embeddings.weight", sd["embeddings.position_embeddings.weight"])
    typ = g.init(ip + "embeddings.token_type_embeddings.weight", sd["embeddings.token_type_embeddings.weight"])
    n_pos = sd["embeddings.position_embeddings.weight"].shape[0]
    pos_ids = g.init("onnx::Slice_110", np.arange(n_pos, dtype=np.int64)[None, :])
    seq = g.node("Gather", [g.node("Shape", [ids], "Shape"), g.const(1)], "Gather")
    seq1 = g.node("Unsqueeze", [seq, g.const([0])], "embeddings/Unsqueeze")
    pos_slice = g.node("Slice", [pos_ids, g.const([0]), seq1, g.const([1]), g.const([1])], "embeddings/Slice")
    x = g.node("Gather", [word, ids], "embeddings/word_embeddings/Gather")
    x = g.node("Add", [x, g.node("Gather", [typ, tt], "embeddings/token_type_embeddings/Gather")], "embeddings/Add")
    x = g.node("Add", [x, g.node("Gather", [pos, pos_slice], "embeddings/position_embeddings/Gather")],
               "embeddings/Add_1")
    x = g.layer_norm(x, sd, "embeddings.LayerNorm", "embeddings/LayerNorm", eps)
    # Extended mask: (1 - mask) * float32.min, [B, 1, 1, S].
    m = g.node("Unsqueeze", [mask, g.const([1, 2])], "Unsqueeze")
    m = g.node("Cast", [m], "Cast", to=TensorProto.FLOAT)
    m = g.node("Sub", [g.const(1.0, np.float32), m], "Sub")
    m = g.node("Mul", [m, g.const(np.finfo(np.float32).min, np.float32)], "Mul")
    split = g.const([0, 0, heads, d])
    merge = g.const([0, 0, h])
    half_scale = g.const(np.float32(1.0 / np.sqrt(np.sqrt(d))), np.float32)
    for i in range(cfg["num_hidden_layers"]):
        p, k = f"encoder/layer.{i}", f"encoder.layer.{i}"

        def proj(name, perm):
            y = g.linear(x, sd, f"{k}.attention.self.{name}", f"{p}/attention/self/{name}")
            y = g.node("Reshape", [y, split], None)
            return g.node("Transpose", [y], None, perm=perm)

        q = g.node("Mul", [proj("query", [0, 2, 1, 3]), half_scale], f"{p}/attention/self/Mul")
        kt = g.node("Mul", [proj("key", [0, 2, 3, 1]), half_scale], f"{p}/attention/self/Mul_1")
        v = proj("value", [0, 2, 1, 3])
        s = g.node("MatMul", [q, kt], f"{p}/attention/self/MatMul")
        s = g.node("Add", [s, m], f"{p}/attention/self/Add")
        s = g.node("Softmax", [s], f"{p}/attention/self/Softmax", axis=-1)
        c = g.node("MatMul", [s, v], f"{p}/attention/self/MatMul_1")
        c = g.node("Transpose", [c], f"{p}/attention/self/Transpose_3", perm=[0, 2, 1, 3])
        c = g.node("Reshape", [c, merge], f"{p}/attention/self/Reshape_3")
        a = g.linear(c, sd, f"{k}.attention.output.dense", f"{p}/attention/output/dense")
        a = g.node("Add", [a, x], f"{p}/attention/output/Add")
        a = g.layer_norm(a, sd, f"{k}.attention.output.LayerNorm", f"{p}/attention/output/LayerNorm", eps)
        f = g.linear(a, sd, f"{k}.intermediate.dense", f"{p}/intermediate/dense")
        act = f"{p}/intermediate/intermediate_act_fn"
        e = g.node("Erf", [g.node("Div", [f, g.const(np.float32(np.sqrt(2.0)), np.float32)], f"{act}/Div")], f"{act}/Erf")
        e = g.node("Add", [e, g.const(1.0, np.float32)], f"{act}/Add")
        f = g.node("Mul", [g.node("Mul", [f, e], f"{act}/Mul"), g.const(0.5, np.float32)], f"{act}/Mul_1")
        o = g.linear(f, sd, f"{k}.output.dense", f"{p}/output/dense")
        o = g.node("Add", [o, a], f"{p}/output/Add")
        x = g.layer_norm(o, sd, f"{k}.output.LayerNorm", f"{p}/output/LayerNorm", eps)
    out_name = "last_hidden_state"
    g.scope = ""
    if head == "token":
        x = g.linear(x, sd, "classifier", "classifier")
        out_name = "logits"
    elif head == "seqcls":
        g.scope = scope
        cls = g.node("Gather", [x, g.const(0)], "pooler/Gather", axis=1)
        pooled = g.node("Tanh", [g.linear(cls, sd, "pooler.dense", "pooler/dense")], "pooler/activation/Tanh")
        g.scope = ""
        x = g.linear(pooled, sd, "classifier", "classifier")
        out_name = "logits"
    g.nodes.append(helper.make_node("Identity", [x], [out_name], name="output"))
    ins = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch_size", "sequence_length"])
           for n in (ids, mask, tt)]
    dims = {None: ["batch_size", "sequence_length", h],
            "token": ["batch_size", "sequence_length", len(sd.get("classifier.bias", []))],
            "seqcls": ["batch_size", len(sd.get("classifier.bias", []))]}[head]
    outs = [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, dims)]
    graph = helper.make_graph(g.nodes, "main_graph", ins, outs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="pytorch", producer_version="2.5.1")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


# ---- dtype variants (transformers.js scripts/quantize.py) -----------------------------------

def q8(model, weight_type, per_channel=True, reduce_range=True):
    from onnxruntime.quantization import QuantizationMode
    from onnxruntime.quantization.onnx_quantizer import ONNXQuantizer
    from onnxruntime.quantization.registry import IntegerOpsRegistry
    from onnxruntime.quantization import QuantType
    q = ONNXQuantizer(model, per_channel, reduce_range, mode=QuantizationMode.IntegerOps, static=False,
                      weight_qType=weight_type, activation_qType=QuantType.QUInt8, tensors_range=None,
                      nodes_to_quantize=[], nodes_to_exclude=[],
                      op_types_to_quantize=set(IntegerOpsRegistry.keys()),
                      extra_options=dict(EnableSubgraph=True, MatMulConstBOnly=True))
    q.quantize_model()
    return q.model.model


def fp16(model):
    from onnxruntime.transformers.float16 import convert_float_to_float16
    return convert_float_to_float16(model, keep_io_types=True)


def q4(model, block_size=32):
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    q = MatMulNBitsQuantizer(model=model, block_size=block_size, is_symmetric=True, accuracy_level=None)
    q.process()
    return q.model.model


def bnb4(model, quant_type=1, block_size=64):
    from onnxruntime.quantization.matmul_bnb4_quantizer import MatMulBnb4Quantizer
    q = MatMulBnb4Quantizer(model=model, block_size=block_size, quant_type=quant_type)
    q.process()
    return q.model.model


def weight_only(model, use_dq):
    """int8 weights, symmetric per output column (tables: per row), dequantized in the graph."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    uses = {}
    for n in g.node:
        for i, x in enumerate(n.input):
            uses.setdefault(x, []).append((n, i))
    new_nodes, drop = [], set()
    for name, t in list(inits.items()):
        arr = numpy_helper.to_array(t)
        if arr.dtype != np.float32 or arr.ndim != 2 or arr.size < 64:
            continue
        sites = uses.get(name, [])
        if not sites or not all((n.op_type, i) in (("MatMul", 1), ("Gather", 0)) for n, i in sites):
            continue
        axis = 1 if sites[0][0].op_type == "MatMul" else 0  # MatMul [in, out]: per column
        amax = np.abs(arr).max(axis=1 - axis, keepdims=True)
        scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
        qv = np.clip(np.round(arr / scale), -127, 127).astype(np.int8)
        g.initializer.append(numpy_helper.from_array(qv, name + "_int8"))
        deq = name + "_dequantized"
        if use_dq:
            g.initializer.append(numpy_helper.from_array(scale.reshape(-1), name + "_scale"))
            new_nodes.append(helper.make_node("DequantizeLinear", [name + "_int8", name + "_scale"], [deq],
                                              name=name + "_DequantizeLinear", axis=axis))
        else:
            g.initializer.append(numpy_helper.from_array(scale, name + "_scale"))
            new_nodes.append(helper.make_node("Cast", [name + "_int8"], [name + "_float"],
                                              name=name + "_Cast", to=TensorProto.FLOAT))
            new_nodes.append(helper.make_node("Mul", [name + "_float", name + "_scale"], [deq],
                                              name=name + "_Mul"))
        for n, i in sites:
            n.input[i] = deq
        drop.add(name)
    kept = [t for t in g.initializer if t.name not in drop]
    g.ClearField("initializer")
    g.initializer.extend(kept)
    nodes = new_nodes + list(g.node)
    g.ClearField("node")
    g.node.extend(nodes)
    onnx.checker.check_model(model)
    return model


def variants(fp32):
    from onnxruntime.quantization import QuantType
    c = lambda: onnx.ModelProto.FromString(fp32.SerializeToString())  # noqa: E731
    return {
        "fp32": lambda: c(),
        "fp16": lambda: fp16(c()),
        "q8": lambda: q8(c(), QuantType.QInt8),
        "int8": lambda: q8(c(), QuantType.QInt8),
        "uint8": lambda: q8(c(), QuantType.QUInt8),
        "q4": lambda: q4(c()),
        "q4f16": lambda: fp16(q4(c())),
        "bnb4": lambda: bnb4(c(), 1),
        "bnb4_fp4": lambda: bnb4(c(), 0),
        "wo_int8": lambda: weight_only(c(), use_dq=False),
        "wo_dq": lambda: weight_only(c(), use_dq=True),
    }


# ---- the set ---------------------------------------------------------------------------------

def config(folder):
    return json.loads((folder / "config.json").read_text())


def model_set():
    """(model, export, dtype) -> builder; export is `optimum` or `st` (sentence-transformers)."""
    out = {}
    specs = [
        ("minilm", "optimum", minilm_state, MODELS / "minilm", None, "/", ""),
        ("pii", "optimum", pii_state, MODELS / "pii", "token", "/bert", "bert."),
        ("seqcls", "optimum", seqcls_state, ROOT / "tests/heads/seqcls", "seqcls", "/bert", "bert."),
    ]
    for model, export, state, folder, head, scope, prefix in specs:
        def fp32(state=state, folder=folder, head=head, scope=scope.rstrip("/"), prefix=prefix):
            return build_fp32(state(), config(folder), head, scope, prefix)
        dtypes = ["fp32", "fp16", "q8", "int8", "uint8", "q4", "q4f16", "bnb4", "bnb4_fp4", "wo_int8", "wo_dq"]
        if model == "seqcls":
            dtypes = ["fp32", "q8", "uint8"]
        for dt in dtypes:
            out[(model, export, dt)] = (fp32, dt)
    st = lambda: build_fp32(minilm_state(), config(MODELS / "minilm"), None, "/0/auto_model",  # noqa: E731
                            "0.auto_model.", decomposed_ln=True)
    out[("minilm", "st", "fp32")] = (st, "fp32")
    out[("minilm", "st", "q8")] = (st, "q8")
    return out


def file_name(model, export, dt):
    return f"{model}-{export}-{dt}.onnx"


def checksum(path):
    """size and sum(byte_i * (i % 65521 + 1)) mod 2**64 (tests/onnx_dtypes.rs computes the same)."""
    data = pathlib.Path(path).read_bytes()
    total, chunk = np.uint64(0), 65521 * 64
    w = np.tile(np.arange(1, 65522, dtype=np.uint64), 64)
    for at in range(0, len(data), chunk):  # chunks start at multiples of 65521
        b = np.frombuffer(data, dtype=np.uint8, count=min(chunk, len(data) - at), offset=at)
        total += np.sum(b.astype(np.uint64) * w[: b.size], dtype=np.uint64)
    return len(data), str(int(total))


def build_all(out_dir, want_sha):
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = {}
    for (model, export, dt), (fp32, kind) in model_set().items():
        path = out_dir / file_name(model, export, dt)
        if path.exists() and want_sha.get(path.name) == checksum(path):
            continue
        key = (model, export)
        if key not in cache:
            cache.clear()
            cache[key] = fp32()
        m = variants(cache[key])[kind]()
        onnx.save(m, str(path))
        print(f"wrote {path} ({path.stat().st_size >> 20} MiB)")


# ---- goldens (onnxruntime on each file) -----------------------------------------------------

def exact_dequantized(fp32, qmodel):
    """The fp32 graph with each weight replaced by the q8 file's exact dequantization
    (onnxruntime names them X_quantized, X_scale, X_zero_point)."""
    q = {i.name: numpy_helper.to_array(i) for i in qmodel.graph.initializer}
    out = onnx.ModelProto.FromString(fp32.SerializeToString())
    for t in out.graph.initializer:
        if t.name + "_quantized" in q:
            w = (q[t.name + "_quantized"].astype(np.float32) - q[t.name + "_zero_point"].astype(np.float32)) \
                * q[t.name + "_scale"].astype(np.float32)
            t.CopyFrom(numpy_helper.from_array(w.astype(np.float32), t.name))
    return out


def run_cases(sess, tok, model):
    cases = []
    for text in TEXTS[model]:
        enc = tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                 "token_type_ids": np.zeros_like(ids)}
        out = sess.run(None, feeds)[0][0].astype(np.float64)
        case = {"text": text, "input_ids": enc.ids}
        if model == "minilm":
            e = out.mean(axis=0)
            case["embedding"] = [round(float(v), 7) for v in e / np.linalg.norm(e)]
        else:
            p = np.exp(out - out.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            case["probs"] = [[round(float(v), 7) for v in row] for row in np.atleast_2d(p)]
        cases.append(case)
    return cases


def goldens(out_dir):
    import onnxruntime as ort
    from tokenizers import Tokenizer
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    files = []
    for (model, export, dt) in model_set():
        folder = MODELS / ("minilm" if model == "seqcls" else model)
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        path = out_dir / file_name(model, export, dt)
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        entry = {"model": model, "export": export, "dtype": dt, "file": path.name,
                 "size": checksum(path)[0], "checksum": checksum(path)[1],
                 "cases": run_cases(sess, tok, model)}
        if dt in ("q8", "int8", "uint8"):
            exact = exact_dequantized(onnx.load(str(out_dir / file_name(model, export, "fp32"))),
                                      onnx.load(str(path)))
            sess = ort.InferenceSession(exact.SerializeToString(), so, providers=["CPUExecutionProvider"])
            entry["exact"] = run_cases(sess, tok, model)
        files.append(entry)
        print(f"golden {path.name}")
    meta = {"generator": "scripts/make_onnx_dtypes.py --goldens",
            "versions": {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__},
            "note": "onnxruntime 1 thread, graph optimizations off; embeddings: mean pooled and "
                    "normalised last_hidden_state; probs: softmax of logits per token (pii) or sequence; "
                    "exact: the fp32 graph run with the q8 file's weights dequantized exactly, "
                    "(q - zero_point) * scale, i.e. without onnxruntime's activation quantization",
            "files": files}
    GOLDEN.write_text(json.dumps(meta, separators=(",", ":")) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("WEBERT_ONNX_DTYPES", ROOT / "target/onnx-dtypes"))
    ap.add_argument("--goldens", action="store_true")
    a = ap.parse_args()
    out_dir = pathlib.Path(a.out)
    want = {}
    if GOLDEN.exists():
        want = {f["file"]: (f["size"], f["checksum"]) for f in json.loads(GOLDEN.read_text())["files"]}
    build_all(out_dir, want)
    if a.goldens:
        goldens(out_dir)


if __name__ == "__main__":
    main()
