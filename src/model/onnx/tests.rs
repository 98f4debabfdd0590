use super::proto::ValueInfoProto;
use super::proto::{dtype, AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto};
use super::*;
use prost::Message;

// ---- tensors and nodes ---------------------------------------------------------------

fn tensor(name: &str, dims: &[i64], data_type: i32, raw: Vec<u8>) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type,
        raw_data: raw,
        ..Default::default()
    }
}

fn f32s(name: &str, dims: &[i64], v: &[f32]) -> TensorProto {
    tensor(
        name,
        dims,
        dtype::FLOAT,
        v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
}

fn u8s(name: &str, dims: &[i64], v: &[u8]) -> TensorProto {
    tensor(name, dims, dtype::UINT8, v.to_vec())
}

fn i64s(name: &str, dims: &[i64], v: &[i64]) -> TensorProto {
    tensor(
        name,
        dims,
        7, // INT64
        v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
}

fn int(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i,
        ..Default::default()
    }
}

fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        ints: v.to_vec(),
        ..Default::default()
    }
}

const MS_OPS: &[&str] = &[
    "MatMulNBits",
    "MatMulBnb4",
    "GatherBlockQuantized",
    "MatMulIntegerToFloat",
    "SkipLayerNormalization",
];

/// Deterministic pseudo-random values in 0..modulo.
fn lcg(n: usize, seed: u32, modulo: u32) -> Vec<u32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 16) % modulo
        })
        .collect()
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    lcg(n, seed, 2001)
        .into_iter()
        .map(|v| (v as f32 - 1000.0) / 1000.0)
        .collect()
}

fn pack_nibbles(v: &[u32]) -> Vec<u8> {
    v.chunks(2)
        .map(|c| (c[0] | c.get(1).copied().unwrap_or(0) << 4) as u8)
        .collect()
}

fn transpose(w: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; w.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = w[r * cols + c];
        }
    }
    out
}

// ---- a miniature encoder, written the way exporters write BERT ----------------------------

/// How a linear layer's weight is stored in the graph.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Enc {
    F32,
    /// q4 `MatMulNBits`, block 16, no zero points.
    NBits,
    /// q8: `DynamicQuantizeLinear → MatMulInteger → Cast → Mul(a_scale × b_scale)`.
    Integer {
        signed: bool,
    },
    /// int8 constant → `DequantizeLinear` (per column) → MatMul.
    Dq,
    /// int8 constant → `Cast` → `Mul(scale)` → MatMul.
    CastMul,
    /// `MatMulBnb4` with `quant_type` 0 (FP4) or 1 (NF4), block 8.
    Bnb4(i64),
}

/// How the embedding tables are stored.
#[derive(Clone, Copy, PartialEq)]
enum Table {
    F32,
    /// uint8 table → Gather → DequantizeLinear (onnxruntime's dynamic quantization).
    GatherDq,
    /// int8 table → Cast → Mul(scale per row) → Gather.
    CastMul,
}

#[derive(Clone, Copy, PartialEq)]
enum Head {
    None,
    Token,
    Qa,
    Pooled,
    MaskedLm,
}

struct Spec {
    enc: Enc,
    table: Table,
    decomposed_ln: bool,
    head: Head,
    layers: usize,
    token_types: bool,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            enc: Enc::F32,
            table: Table::F32,
            decomposed_ln: false,
            head: Head::None,
            layers: 2,
            token_types: true,
        }
    }
}

const H: usize = 4;
const FF: usize = 8;
const VOCAB: usize = 6;
const POS: usize = 8;

/// Builds the graph with anonymous initializer and node names, so only structure can name
/// the weights, and records what each state-dict name must hold.
struct Mini {
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
    n: usize,
    seed: u32,
    want: Want,
    spec: Spec,
}

impl Mini {
    fn fresh(&mut self, what: &str) -> String {
        self.n += 1;
        format!("{what}_{}", self.n)
    }

    fn node(&mut self, op: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> String {
        self.node_n(op, inputs, attrs, 1).remove(0)
    }

    fn node_n(
        &mut self,
        op: &str,
        inputs: &[&str],
        attrs: Vec<AttributeProto>,
        outputs: usize,
    ) -> Vec<String> {
        let name = self.fresh("n");
        let output: Vec<String> = (0..outputs).map(|i| format!("{name}_o{i}")).collect();
        self.nodes.push(NodeProto {
            op_type: op.into(),
            name,
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: output.clone(),
            domain: if MS_OPS.contains(&op) {
                "com.microsoft".into()
            } else {
                String::new()
            },
            attribute: attrs,
        });
        output
    }

    fn f32_init(&mut self, dims: &[i64], v: &[f32]) -> String {
        let name = self.fresh("w");
        self.inits.push(f32s(&name, dims, v));
        name
    }

    fn scalar(&mut self, v: f32) -> String {
        self.f32_init(&[], &[v])
    }

    fn expect(&mut self, name: &str, shape: &[usize], data: Vec<f32>) {
        self.want.push((name.to_string(), shape.to_vec(), data));
    }

    fn next_seed(&mut self) -> u32 {
        self.seed += 1;
        self.seed
    }

    /// `x · W + b` with W `[n_in, n_out]` stored as `enc`; returns the output.
    fn linear(&mut self, x: &str, n_in: usize, n_out: usize, name: &str, enc: Enc) -> String {
        let seed = self.next_seed();
        let (ni, no) = (n_in as i64, n_out as i64);
        let scales: Vec<f32> = (0..n_out).map(|j| 0.01 * (j as f32 + 1.0)).collect();
        // `w[o][i]`, PyTorch layout, as the importer must return it.
        let (y, w): (String, Vec<f32>) = match enc {
            Enc::F32 => {
                let w = values(n_in * n_out, seed); // [in, out]
                let b = self.f32_init(&[ni, no], &w);
                (
                    self.node("MatMul", &[x, &b], vec![]),
                    transpose(&w, n_in, n_out),
                )
            }
            Enc::NBits => {
                let bs = 16;
                let blocks = n_in.div_ceil(bs);
                let q = lcg(n_out * blocks * bs, seed, 16);
                let b = self.fresh("w");
                self.inits.push(u8s(
                    &b,
                    &[no, blocks as i64, (bs / 2) as i64],
                    &pack_nibbles(&q),
                ));
                let s = self.f32_init(&[(n_out * blocks) as i64], &vec![0.5; n_out * blocks]);
                let attrs = vec![
                    int("K", ni),
                    int("N", no),
                    int("bits", 4),
                    int("block_size", bs as i64),
                ];
                let mut w = Vec::new();
                for o in 0..n_out {
                    for i in 0..n_in {
                        w.push((q[o * blocks * bs + i] as f32 - 8.0) * 0.5);
                    }
                }
                (self.node("MatMulNBits", &[x, &b, &s], attrs), w)
            }
            Enc::Integer { signed } => {
                let q = lcg(n_in * n_out, seed, 256);
                let zps = lcg(n_out, seed + 7, 256);
                type Map = fn(u32) -> i32;
                let (data_type, code, zp): (i32, Map, Map) = if signed {
                    (dtype::INT8, |v| v as i32 - 128, |v| v as i32 % 16 - 8)
                } else {
                    (dtype::UINT8, |v| v as i32, |v| v as i32)
                };
                let b = self.fresh("w");
                let bytes = q.iter().map(|&v| code(v) as u8).collect();
                self.inits.push(tensor(&b, &[ni, no], data_type, bytes));
                let z = self.fresh("zp");
                let zb = zps.iter().map(|&v| zp(v) as u8).collect();
                self.inits.push(tensor(&z, &[no], data_type, zb));
                let s = self.f32_init(&[no], &scales);
                let dq = self.node_n("DynamicQuantizeLinear", &[x], vec![], 3);
                let mm = self.node("MatMulInteger", &[&dq[0], &b, &dq[2], &z], vec![]);
                let cast = self.node("Cast", &[&mm], vec![int("to", 1)]);
                let sc = self.node("Mul", &[&dq[1], &s], vec![]);
                let mut w = vec![0.0; n_in * n_out];
                for i in 0..n_in {
                    for o in 0..n_out {
                        let c = code(q[i * n_out + o]) as f32;
                        w[o * n_in + i] = (c - zp(zps[o]) as f32) * scales[o];
                    }
                }
                (self.node("Mul", &[&cast, &sc], vec![]), w)
            }
            Enc::Dq | Enc::CastMul => {
                let q: Vec<i8> = lcg(n_in * n_out, seed, 255)
                    .into_iter()
                    .map(|v| (v as i32 - 127) as i8)
                    .collect();
                let b = self.fresh("w");
                let bytes = q.iter().map(|&v| v as u8).collect();
                self.inits.push(tensor(&b, &[ni, no], dtype::INT8, bytes));
                let deq = if enc == Enc::Dq {
                    let s = self.f32_init(&[no], &scales);
                    self.node("DequantizeLinear", &[&b, &s], vec![int("axis", 1)])
                } else {
                    let s = self.f32_init(&[1, no], &scales);
                    let cast = self.node("Cast", &[&b], vec![int("to", 1)]);
                    self.node("Mul", &[&cast, &s], vec![])
                };
                let mut w = vec![0.0; n_in * n_out];
                for i in 0..n_in {
                    for o in 0..n_out {
                        w[o * n_in + i] = q[i * n_out + o] as f32 * scales[o];
                    }
                }
                (self.node("MatMul", &[x, &deq], vec![]), w)
            }
            Enc::Bnb4(quant_type) => {
                let block = 8;
                let numel = n_in * n_out;
                let codes = lcg(numel, seed, 16);
                let absmax: Vec<f32> = (0..numel.div_ceil(block))
                    .map(|b| 0.25 * (b as f32 + 1.0))
                    .collect();
                // High nibble first.
                let packed: Vec<u8> = codes
                    .chunks(2)
                    .map(|c| ((c[0] << 4) | c.get(1).copied().unwrap_or(0)) as u8)
                    .collect();
                let b = self.fresh("w");
                self.inits.push(u8s(&b, &[packed.len() as i64], &packed));
                let a = self.f32_init(&[absmax.len() as i64], &absmax);
                let book = if quant_type == 1 { NF4_REF } else { FP4_REF };
                let w = (0..numel)
                    .map(|i| book[codes[i] as usize] * absmax[i / block])
                    .collect();
                let attrs = vec![
                    int("K", ni),
                    int("N", no),
                    int("block_size", block as i64),
                    int("quant_type", quant_type),
                ];
                (self.node("MatMulBnb4", &[x, &b, &a], attrs), w)
            }
        };
        let bias = values(n_out, seed + 100);
        self.expect(&format!("{name}.weight"), &[n_out, n_in], w);
        self.expect(&format!("{name}.bias"), &[n_out], bias.clone());
        let b = self.f32_init(&[no], &bias);
        self.node("Add", &[&b, &y], vec![])
    }

    fn layer_norm(&mut self, x: &str, name: &str) -> String {
        let seed = self.next_seed();
        let (g, b) = (values(H, seed), values(H, seed + 50));
        self.expect(&format!("{name}.weight"), &[H], g.clone());
        self.expect(&format!("{name}.bias"), &[H], b.clone());
        let (g, b) = (
            self.f32_init(&[H as i64], &g),
            self.f32_init(&[H as i64], &b),
        );
        if !self.spec.decomposed_ln {
            return self.node("LayerNormalization", &[x, &g, &b], vec![]);
        }
        let mean = self.node("ReduceMean", &[x], vec![ints("axes", &[-1])]);
        let d = self.node("Sub", &[x, &mean], vec![]);
        let two = self.scalar(2.0);
        let sq = self.node("Pow", &[&d, &two], vec![]);
        let var = self.node("ReduceMean", &[&sq], vec![ints("axes", &[-1])]);
        let eps = self.scalar(1e-12);
        let var = self.node("Add", &[&var, &eps], vec![]);
        let std = self.node("Sqrt", &[&var], vec![]);
        let y = self.node("Div", &[&d, &std], vec![]);
        let y = self.node("Mul", &[&y, &g], vec![]);
        self.node("Add", &[&y, &b], vec![])
    }

    /// A lookup table `[rows, H]` read with `ids`, stored as the spec says.
    fn table(&mut self, rows: usize, ids: &str, name: &str) -> String {
        let seed = self.next_seed();
        let (r, h) = (rows as i64, H as i64);
        match self.spec.table {
            Table::F32 => {
                let t = values(rows * H, seed);
                self.expect(name, &[rows, H], t.clone());
                let t = self.f32_init(&[r, h], &t);
                self.node("Gather", &[&t, ids], vec![])
            }
            Table::GatherDq => {
                let q = lcg(rows * H, seed, 256);
                let want = q.iter().map(|&v| (v as f32 - 100.0) * 0.02).collect();
                self.expect(name, &[rows, H], want);
                let t = self.fresh("w");
                let bytes: Vec<u8> = q.iter().map(|&v| v as u8).collect();
                self.inits.push(u8s(&t, &[r, h], &bytes));
                let s = self.scalar(0.02);
                let z = self.fresh("zp");
                self.inits.push(u8s(&z, &[], &[100]));
                let g = self.node("Gather", &[&t, ids], vec![]);
                self.node("DequantizeLinear", &[&g, &s, &z], vec![])
            }
            Table::CastMul => {
                let q: Vec<i8> = lcg(rows * H, seed, 255)
                    .into_iter()
                    .map(|v| (v as i32 - 127) as i8)
                    .collect();
                let scale: Vec<f32> = (0..rows).map(|i| 0.1 * (i as f32 + 1.0)).collect();
                let want = (0..rows * H).map(|i| q[i] as f32 * scale[i / H]).collect();
                self.expect(name, &[rows, H], want);
                let t = self.fresh("w");
                self.inits.push(tensor(
                    &t,
                    &[r, h],
                    dtype::INT8,
                    q.iter().map(|&v| v as u8).collect(),
                ));
                let s = self.f32_init(&[r, 1], &scale);
                let cast = self.node("Cast", &[&t], vec![int("to", 1)]);
                let table = self.node("Mul", &[&cast, &s], vec![]);
                self.node("Gather", &[&table, ids], vec![])
            }
        }
    }

    fn attention(&mut self, x: &str, i: usize) -> String {
        let p = format!("bert.encoder.layer.{i}.attention");
        let enc = self.spec.enc;
        let split = self.fresh("shape");
        self.inits.push(i64s(&split, &[4], &[0, 0, 2, 2]));
        // Written V, K, Q: the order of the nodes must not matter.
        let v = self.linear(x, H, H, &format!("{p}.self.value"), enc);
        let k = self.linear(x, H, H, &format!("{p}.self.key"), enc);
        let q = self.linear(x, H, H, &format!("{p}.self.query"), enc);
        let heads = |m: &mut Mini, t: &str, perm: &[i64]| {
            let r = m.node("Reshape", &[t, &split], vec![]);
            m.node("Transpose", &[&r], vec![ints("perm", perm)])
        };
        let half = self.scalar(0.840_896_4);
        let v = heads(self, &v, &[0, 2, 1, 3]);
        let k = heads(self, &k, &[0, 2, 3, 1]);
        let k = self.node("Mul", &[&k, &half], vec![]);
        let q = heads(self, &q, &[0, 2, 1, 3]);
        let q = self.node("Mul", &[&q, &half], vec![]);
        let s = self.node("MatMul", &[&q, &k], vec![]);
        let s = self.node("Add", &[&s, "mask"], vec![]);
        let s = self.node("Softmax", &[&s], vec![int("axis", -1)]);
        let c = self.node("MatMul", &[&s, &v], vec![]);
        let c = self.node("Transpose", &[&c], vec![ints("perm", &[0, 2, 1, 3])]);
        let merge = self.fresh("shape");
        self.inits.push(i64s(&merge, &[3], &[0, 0, H as i64]));
        let c = self.node("Reshape", &[&c, &merge], vec![]);
        let o = self.linear(&c, H, H, &format!("{p}.output.dense"), enc);
        let o = self.node("Add", &[&o, x], vec![]);
        self.layer_norm(&o, &format!("{p}.output.LayerNorm"))
    }

    fn ffn(&mut self, x: &str, i: usize) -> String {
        let p = format!("bert.encoder.layer.{i}");
        let enc = self.spec.enc;
        let f = self.linear(x, H, FF, &format!("{p}.intermediate.dense"), enc);
        let f = self.gelu(&f);
        let o = self.linear(&f, FF, H, &format!("{p}.output.dense"), enc);
        let o = self.node("Add", &[&o, x], vec![]);
        self.layer_norm(&o, &format!("{p}.output.LayerNorm"))
    }

    fn gelu(&mut self, x: &str) -> String {
        let sqrt2 = self.scalar(std::f32::consts::SQRT_2);
        let d = self.node("Div", &[x, &sqrt2], vec![]);
        let e = self.node("Erf", &[&d], vec![]);
        let one = self.scalar(1.0);
        let e = self.node("Add", &[&e, &one], vec![]);
        let m = self.node("Mul", &[x, &e], vec![]);
        let half = self.scalar(0.5);
        self.node("Mul", &[&m, &half], vec![])
    }
}

/// What a state-dict name must hold: shape and values.
type Want = Vec<(String, Vec<usize>, Vec<f32>)>;

fn build(spec: Spec) -> (Vec<u8>, Want) {
    let mut m = Mini {
        nodes: Vec::new(),
        inits: Vec::new(),
        n: 0,
        seed: 0,
        want: Vec::new(),
        spec,
    };
    let pos_ids = m.fresh("pos_ids");
    m.inits
        .push(i64s(&pos_ids, &[1, 8], &[0, 1, 2, 3, 4, 5, 6, 7]));
    let shape = m.node("Shape", &["input_ids"], vec![]);
    let start = m.fresh("c");
    m.inits.push(i64s(&start, &[1], &[0]));
    let end = m.node("Slice", &[&shape, &start], vec![]);
    let positions = m.node("Slice", &[&pos_ids, &start, &end], vec![]);
    // Position and token-type lookups first: the word lookup is found from `input_ids`.
    let pos = m.table(
        POS,
        &positions,
        "bert.embeddings.position_embeddings.weight",
    );
    let tt = if m.spec.token_types {
        Some(m.table(
            2,
            "token_type_ids",
            "bert.embeddings.token_type_embeddings.weight",
        ))
    } else {
        None
    };
    let word = m.table(VOCAB, "input_ids", "bert.embeddings.word_embeddings.weight");
    let mut x = word;
    if let Some(tt) = tt {
        x = m.node("Add", &[&x, &tt], vec![]);
    }
    x = m.node("Add", &[&x, &pos], vec![]);
    x = m.layer_norm(&x, "bert.embeddings.LayerNorm");
    for i in 0..m.spec.layers {
        x = m.attention(&x, i);
        x = m.ffn(&x, i);
    }
    let out = match m.spec.head {
        Head::None => x,
        Head::Token => m.linear(&x, H, 3, "classifier", Enc::F32),
        Head::Qa => {
            let l = m.linear(&x, H, 2, "qa_outputs", Enc::F32);
            m.node_n("Split", &[&l], vec![int("axis", -1)], 2).remove(0)
        }
        Head::Pooled => {
            let zero = m.fresh("c");
            m.inits.push(i64s(&zero, &[], &[0]));
            let cls = m.node("Gather", &[&x, &zero], vec![int("axis", 1)]);
            let p = m.linear(&cls, H, H, "bert.pooler.dense", Enc::F32);
            let p = m.node("Tanh", &[&p], vec![]);
            m.linear(&p, H, 3, "classifier", Enc::F32)
        }
        Head::MaskedLm => {
            let d = m.linear(&x, H, H, "cls.predictions.transform.dense", Enc::F32);
            let d = m.gelu(&d);
            let n = m.layer_norm(&d, "cls.predictions.transform.LayerNorm");
            // Decoder tied to the word table: its transpose.
            let word = m.inits.iter().find(|t| t.dims == [VOCAB as i64, H as i64]);
            let word = word.map(|t| t.name.clone()).unwrap_or_default();
            let wt = m.node("Transpose", &[&word], vec![ints("perm", &[1, 0])]);
            let y = m.node("MatMul", &[&n, &wt], vec![]);
            let bias = values(VOCAB, 999);
            m.expect("cls.predictions.bias", &[VOCAB], bias.clone());
            let b = m.f32_init(&[VOCAB as i64], &bias);
            m.node("Add", &[&y, &b], vec![])
        }
    };
    let _ = m.node("Identity", &[&out], vec![]);
    let io = |n: &str| ValueInfoProto { name: n.into() };
    let mut inputs = vec![io("input_ids"), io("attention_mask")];
    if m.spec.token_types {
        inputs.push(io("token_type_ids"));
    }
    let graph = GraphProto {
        node: m.nodes,
        initializer: m.inits,
        input: inputs,
        output: vec![io("out")],
        ..Default::default()
    };
    let bytes = ModelProto {
        ir_version: 8,
        graph: Some(graph),
    }
    .encode_to_vec();
    (bytes, m.want)
}

const NF4_REF: [f32; 16] = [
    -1.0,
    -0.696_192_8,
    -0.525_073_05,
    -0.394_917_5,
    -0.284_441_38,
    -0.184_773_43,
    -0.091_050_036,
    0.0,
    0.079_580_3,
    0.160_930_2,
    0.246_112_3,
    0.337_915_24,
    0.440_709_83,
    0.562_617,
    0.722_956_84,
    1.0,
];

/// FP4 (sign, 3-bit float with bias 3) / 12, as onnxruntime's `fp4_qaunt_map`.
const FP4_REF: [f32; 16] = [
    0.0,
    0.0625 / 12.0,
    8.0 / 12.0,
    1.0,
    4.0 / 12.0,
    6.0 / 12.0,
    2.0 / 12.0,
    3.0 / 12.0,
    -0.0,
    -0.0625 / 12.0,
    -8.0 / 12.0,
    -1.0,
    -4.0 / 12.0,
    -6.0 / 12.0,
    -2.0 / 12.0,
    -3.0 / 12.0,
];

fn import(bytes: &[u8]) -> HashMap<String, ImportedTensor> {
    import_onnx(bytes)
        .expect("import")
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect()
}

/// Imports `spec`'s graph and checks every tensor the builder recorded, and nothing else.
fn check(spec: Spec) {
    let what = format!("{:?}", spec.enc);
    let (bytes, want) = build(spec);
    let got = import(&bytes);
    for (name, shape, data) in &want {
        let t = got
            .get(name)
            .unwrap_or_else(|| panic!("{what}: missing {name}; got {:?}", got.keys()));
        assert_eq!(&t.shape, shape, "{what}: {name}");
        for (i, (a, b)) in t.data.iter().zip(data).enumerate() {
            assert!(
                (a - b).abs() <= 1e-6 * (1.0 + b.abs()),
                "{what}: {name}[{i}] {a} vs {b}"
            );
        }
    }
    assert_eq!(got.len(), want.len(), "{what}: {:?}", got.keys());
}

// ---- structure ----------------------------------------------------------------------------

#[test]
fn anonymous_f32_encoder_is_named_by_structure() {
    check(Spec::default());
}

#[test]
fn decomposed_layer_norm() {
    check(Spec {
        decomposed_ln: true,
        ..Default::default()
    });
}

#[test]
fn every_head_is_recognised() {
    for head in [Head::Token, Head::Qa, Head::Pooled, Head::MaskedLm] {
        check(Spec {
            head,
            layers: 1,
            ..Default::default()
        });
    }
}

#[test]
fn names_follow_the_model_family() {
    let (bytes, _) = build(Spec {
        token_types: false,
        layers: 1,
        head: Head::Pooled,
        ..Default::default()
    });
    let got: Vec<String> = import_onnx_as(&bytes, ModelType::DistilBert)
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for name in [
        "distilbert.embeddings.word_embeddings.weight",
        "distilbert.embeddings.position_embeddings.weight",
        "distilbert.transformer.layer.0.attention.q_lin.weight",
        "distilbert.transformer.layer.0.attention.out_lin.bias",
        "distilbert.transformer.layer.0.sa_layer_norm.weight",
        "distilbert.transformer.layer.0.ffn.lin2.weight",
        "distilbert.transformer.layer.0.output_layer_norm.bias",
        "pre_classifier.weight",
        "classifier.bias",
    ] {
        assert!(got.iter().any(|n| n == name), "{name} not in {got:?}");
    }
}

// ---- weight encodings ---------------------------------------------------------------------

#[test]
fn q8_dynamic_quantization_int8_and_uint8_weights() {
    for signed in [true, false] {
        check(Spec {
            enc: Enc::Integer { signed },
            table: Table::GatherDq,
            ..Default::default()
        });
    }
}

/// 8-bit codes are read straight from `raw_data`; the same codes as `int32_data` (the other
/// encoding ONNX allows) take the integer path: both give the same weights and codes.
#[test]
fn q8_codes_raw_or_as_int32_data_import_alike() {
    for signed in [true, false] {
        let (bytes, _) = build(Spec {
            enc: Enc::Integer { signed },
            table: Table::GatherDq,
            ..Default::default()
        });
        let mut model = ModelProto::decode(bytes.as_slice()).unwrap();
        let graph = model.graph.as_mut().unwrap();
        let mut moved = 0;
        for t in &mut graph.initializer {
            let int8 = t.data_type == dtype::INT8;
            if (int8 || t.data_type == dtype::UINT8) && t.raw_data.len() > 1 {
                t.int32_data = (t.raw_data.iter())
                    .map(|&b| if int8 { b as i8 as i32 } else { b as i32 })
                    .collect();
                t.raw_data.clear();
                moved += 1;
            }
        }
        assert!(moved > 0, "the builder stores q8 codes raw");
        let (raw, ints) = (import(&bytes), import(&model.encode_to_vec()));
        assert_eq!(raw.len(), ints.len());
        for (name, a) in &raw {
            let b = &ints[name];
            assert_eq!((&a.shape, &a.data), (&b.shape, &b.data), "{name}");
            assert_eq!(a.quant, b.quant, "{name}");
        }
        assert!(
            raw.values().any(|t| t.quant.is_some()),
            "signed {signed}: no codes kept"
        );
    }
}

#[test]
fn q4_matmul_nbits() {
    check(Spec {
        enc: Enc::NBits,
        ..Default::default()
    });
}

#[test]
fn bnb4_nf4_and_fp4() {
    for q in [0, 1] {
        check(Spec {
            enc: Enc::Bnb4(q),
            ..Default::default()
        });
    }
}

#[test]
fn weight_only_int8_dequantize_linear_and_cast_mul() {
    check(Spec {
        enc: Enc::Dq,
        ..Default::default()
    });
    check(Spec {
        enc: Enc::CastMul,
        table: Table::CastMul,
        ..Default::default()
    });
}

// ---- errors -------------------------------------------------------------------------------

fn decode(bytes: &[u8]) -> GraphProto {
    ModelProto::decode(bytes).unwrap().graph.unwrap()
}

fn encode(graph: GraphProto) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        graph: Some(graph),
    }
    .encode_to_vec()
}

fn error_of(graph: GraphProto) -> String {
    import_onnx(&encode(graph)).unwrap_err().to_string()
}

#[test]
fn a_weight_outside_the_structure_names_its_node() {
    let (bytes, _) = build(Spec::default());
    let mut g = decode(&bytes);
    g.initializer
        .push(f32s("stray", &[H as i64, 2], &[0.5; H * 2]));
    let last = g.node.last().unwrap().output[0].clone();
    let mut stray = g.node.last().unwrap().clone();
    stray.op_type = "MatMul".into();
    stray.name = "/mystery/MatMul".into();
    stray.input = vec![last, "stray".into()];
    stray.output = vec!["mystery".into()];
    // Used on something other than the hidden state: a side branch off the attention mask.
    stray.input[0] = "attention_mask".into();
    g.node.push(stray);
    let err = error_of(g);
    assert!(
        err.contains("/mystery/MatMul") && err.contains("MatMul"),
        "{err}"
    );
}

#[test]
fn no_embedding_lookup_is_an_error() {
    let (bytes, _) = build(Spec::default());
    let mut g = decode(&bytes);
    g.input.remove(0);
    let err = error_of(g);
    assert!(err.contains("not a BERT-family encoder"), "{err}");
}

#[test]
fn fused_operators_are_refused_by_name() {
    let (bytes, _) = build(Spec::default());
    let mut g = decode(&bytes);
    g.initializer.push(f32s("gamma", &[2], &[1.0, 1.0]));
    g.node.push(NodeProto {
        op_type: "SkipLayerNormalization".into(),
        domain: "com.microsoft".into(),
        name: "SkipLayerNorm_1".into(),
        input: vec!["a".into(), "b".into(), "gamma".into()],
        output: vec!["c".into()],
        ..Default::default()
    });
    let err = import_onnx(&encode(g)).unwrap_err();
    assert!(matches!(err, OnnxError::UnsupportedOp { .. }), "{err}");
    assert!(err.to_string().contains("SkipLayerNorm_1"));
}

#[test]
fn q8_without_its_scale_is_an_error() {
    let (bytes, _) = build(Spec {
        enc: Enc::Integer { signed: true },
        ..Default::default()
    });
    let mut g = decode(&bytes);
    // Cut the first rescaling Mul off its Cast.
    let cast = g.node.iter().find(|n| n.op_type == "Cast").unwrap().output[0].clone();
    let mul = g
        .node
        .iter_mut()
        .find(|n| n.op_type == "Mul" && n.input.contains(&cast))
        .unwrap();
    mul.input = vec!["attention_mask".into(), "attention_mask".into()];
    let err = error_of(g);
    assert!(
        err.contains("MatMulInteger") && err.contains("scale"),
        "{err}"
    );
}

#[test]
fn integer_table_without_dequantization_is_an_error() {
    let (bytes, _) = build(Spec {
        table: Table::GatherDq,
        ..Default::default()
    });
    let mut g = decode(&bytes);
    for n in g
        .node
        .iter_mut()
        .filter(|n| n.op_type == "DequantizeLinear")
    {
        n.op_type = "Relu".into();
    }
    let err = error_of(g);
    assert!(err.contains("Gather"), "{err}");
}

#[test]
fn bnb4_bad_quant_type_and_sizes_are_errors() {
    let (bytes, _) = build(Spec {
        enc: Enc::Bnb4(1),
        ..Default::default()
    });
    let mut g = decode(&bytes);
    let n = g
        .node
        .iter_mut()
        .find(|n| n.op_type == "MatMulBnb4")
        .unwrap();
    n.attribute
        .iter_mut()
        .find(|a| a.name == "quant_type")
        .unwrap()
        .i = 5;
    let err = error_of(g);
    assert!(
        err.contains("MatMulBnb4") && err.contains("quant_type"),
        "{err}"
    );
    let mut g = decode(&bytes);
    let n = g
        .node
        .iter_mut()
        .find(|n| n.op_type == "MatMulBnb4")
        .unwrap();
    n.attribute.iter_mut().find(|a| a.name == "K").unwrap().i = 64;
    assert!(error_of(g).contains("MatMulBnb4"));
}

#[test]
fn truncated_or_corrupt_bytes_never_panic() {
    let (bytes, _) = build(Spec {
        enc: Enc::NBits,
        layers: 1,
        ..Default::default()
    });
    assert!(import_onnx(&bytes).is_ok());
    let mut errors = 0;
    for len in (0..bytes.len()).step_by(7) {
        errors += import_onnx(&bytes[..len]).is_err() as usize;
    }
    assert!(errors > bytes.len() / 14, "only {errors} prefixes rejected");
    for seed in 0..100u32 {
        let mut b = bytes.clone();
        for (i, r) in lcg(4, seed, u32::MAX).into_iter().enumerate() {
            let at = r as usize % b.len();
            b[at] = b[at].wrapping_add(1 + i as u8 * 37);
        }
        let _ = import_onnx(&b); // must return, Ok or Err
    }
    assert!(matches!(
        import_onnx(b"\xff\xff\xff garbage"),
        Err(OnnxError::Decode(_))
    ));
    assert!(matches!(import_onnx(&[]), Err(OnnxError::NoGraph)));
}

#[test]
fn inconsistent_tensors_and_hostile_attributes_are_errors() {
    let (bytes, _) = build(Spec {
        enc: Enc::NBits,
        layers: 1,
        ..Default::default()
    });
    // A LayerNorm scale shorter than its dims say.
    let mut g = decode(&bytes);
    let ln = g
        .node
        .iter()
        .find(|n| n.op_type == "LayerNormalization")
        .unwrap()
        .input[1]
        .clone();
    let t = g.initializer.iter_mut().find(|t| t.name == ln).unwrap();
    t.raw_data.truncate(4);
    assert!(matches!(
        import_onnx(&encode(g)),
        Err(OnnxError::Tensor { .. })
    ));
    // External data.
    let mut g = decode(&bytes);
    g.initializer[0].data_location = 1;
    assert!(matches!(
        import_onnx(&encode(g)),
        Err(OnnxError::ExternalData(_))
    ));
    // MatMulNBits attributes that do not fit B.
    let cases = [
        (i64::MAX, 4, 4, 16),
        (4, i64::MAX, 4, 16),
        (4, 4, 4, 0),
        (4, 4, 3, 16),
        (4, 4, 4, i64::MAX),
        (4, 4, 4, -16),
        (0, 4, 4, 16),
        (4, 0, 4, 16),
        (64, 4, 4, 16),
    ];
    for (k, n, bits, bs) in cases {
        let mut g = decode(&bytes);
        let node = g
            .node
            .iter_mut()
            .find(|n| n.op_type == "MatMulNBits")
            .unwrap();
        node.attribute = vec![
            int("K", k),
            int("N", n),
            int("bits", bits),
            int("block_size", bs),
        ];
        let err = import_onnx(&encode(g)).unwrap_err();
        assert!(
            matches!(err, OnnxError::Node { .. }),
            "K={k} N={n} bits={bits} block_size={bs}: {err}"
        );
    }
}

#[test]
fn dequantize_linear_axis_out_of_range_is_an_error() {
    let (bytes, _) = build(Spec {
        enc: Enc::Dq,
        layers: 1,
        ..Default::default()
    });
    let mut g = decode(&bytes);
    let dq = g
        .node
        .iter_mut()
        .find(|n| n.op_type == "DequantizeLinear")
        .unwrap();
    dq.attribute = vec![int("axis", 5)];
    let err = error_of(g);
    assert!(err.contains("DequantizeLinear"), "{err}");
}

#[test]
fn broadcast_follows_numpy() {
    let (s, v) = tensor::broadcast(
        (&[2, 3], &[1., 2., 3., 4., 5., 6.]),
        (&[2, 1], &[10., 100.]),
        |a, b| a * b,
    )
    .unwrap();
    assert_eq!(s, [2, 3]);
    assert_eq!(v, [10., 20., 30., 400., 500., 600.]);
    let (s, v) =
        tensor::broadcast((&[3], &[1., 2., 3.]), (&[2, 1], &[1., 2.]), |a, b| a - b).unwrap();
    assert_eq!(s, [2, 3]);
    assert_eq!(v, [0., 1., 2., -1., 0., 1.]);
    assert!(tensor::broadcast((&[2], &[1., 2.]), (&[3], &[1., 2., 3.]), |a, _| a).is_err());
}

#[test]
fn gather_block_quantized_table() {
    let (bytes, _) = build(Spec {
        layers: 1,
        ..Default::default()
    });
    let mut g = decode(&bytes);
    // Swap the word table for a 4-bit GatherBlockQuantized one: 6 rows x 4 columns, block 4.
    let word = g
        .node
        .iter()
        .position(|n| {
            n.op_type == "Gather" && n.input.get(1).map(String::as_str) == Some("input_ids")
        })
        .unwrap();
    let q = lcg(VOCAB * H, 3, 16);
    g.initializer
        .push(u8s("emb", &[VOCAB as i64, 2], &pack_nibbles(&q)));
    let scales: Vec<f32> = (0..VOCAB).map(|r| r as f32 + 1.0).collect();
    g.initializer
        .push(f32s("emb_scales", &[VOCAB as i64, 1], &scales));
    let n = &mut g.node[word];
    n.op_type = "GatherBlockQuantized".into();
    n.domain = "com.microsoft".into();
    n.input = vec!["emb".into(), "input_ids".into(), "emb_scales".into()];
    n.attribute = vec![
        int("bits", 4),
        int("block_size", 4),
        int("quantize_axis", 1),
    ];
    let got = import(&encode(g));
    let w = &got["bert.embeddings.word_embeddings.weight"];
    assert_eq!(w.shape, [VOCAB, H]);
    for (i, &v) in w.data.iter().enumerate() {
        assert_eq!(v, (q[i] as f32 - 8.0) * scales[i / H]);
    }
}

// ---- the real PII model ----------------------------------------------------------------

fn pii_model() -> Option<Vec<u8>> {
    let candidates = [
        std::env::var("WEBERT_PII_ONNX").unwrap_or_default(),
        concat!(env!("CARGO_MANIFEST_DIR"), "/models/pii/onnx/model_q4.onnx").to_string(),
        "/work/main/models/pii/onnx/model_q4.onnx".to_string(),
    ];
    candidates
        .iter()
        .filter(|p| !p.is_empty())
        .find_map(|p| std::fs::read(p).ok())
}

#[test]
fn pii_q4_model_matches_python_reference() {
    let Some(bytes) = pii_model() else {
        eprintln!("skipping: model_q4.onnx not found (set WEBERT_PII_ONNX)");
        return;
    };
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pii_q4_ref.json");
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect(path)).unwrap();
    let mut tensors = import_onnx(&bytes).expect("import PII model");
    let mut want: Vec<&serde_json::Value> =
        reference["tensors"].as_array().unwrap().iter().collect();
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    want.sort_by_key(|t| t["name"].as_str().unwrap().to_string());
    let got_names: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
    let want_names: Vec<&str> = want.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(got_names, want_names);
    let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * (1.0 + b.abs());
    for (got, want) in tensors.iter().zip(want) {
        let name = &got.name;
        let shape: Vec<usize> = want["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(got.shape, shape, "{name}");
        assert_eq!(got.data.len(), shape.iter().product::<usize>(), "{name}");
        for s in want["samples"].as_array().unwrap() {
            let (i, v) = (s[0].as_u64().unwrap() as usize, s[1].as_f64().unwrap());
            assert!(
                close(got.data[i] as f64, v, 1e-6),
                "{name}[{i}]: {} vs {v}",
                got.data[i]
            );
        }
        let data = got.data.iter().map(|&v| v as f64);
        let sum: f64 = data.clone().sum();
        let abs_sum: f64 = data.clone().map(f64::abs).sum();
        let weighted: f64 = data
            .enumerate()
            .map(|(i, v)| v * ((i % 7) as f64 + 1.0))
            .sum();
        for (what, got_v) in [
            ("sum", sum),
            ("abs_sum", abs_sum),
            ("weighted_sum", weighted),
        ] {
            let want_v = want[what].as_f64().unwrap();
            // Relative to the abs sum: f64 accumulation order differs from numpy's pairwise sum.
            assert!(
                (got_v - want_v).abs() <= 1e-9 * (1.0 + abs_sum),
                "{name} {what}: {got_v} vs {want_v}"
            );
        }
    }
}

/// Every parameter HF `BertForTokenClassification` uses (6 layers, as in this model).
#[test]
fn pii_q4_model_covers_bert_token_classification() {
    let Some(bytes) = pii_model() else { return };
    let got: HashMap<String, Vec<usize>> = import_onnx(&bytes)
        .unwrap()
        .into_iter()
        .map(|t| (t.name, t.shape))
        .collect();
    let (h, ff, labels) = (384, 1536, 35);
    let mut want: Vec<(String, Vec<usize>)> = vec![
        (
            "bert.embeddings.word_embeddings.weight".into(),
            vec![19730, h],
        ),
        (
            "bert.embeddings.position_embeddings.weight".into(),
            vec![512, h],
        ),
        (
            "bert.embeddings.token_type_embeddings.weight".into(),
            vec![2, h],
        ),
        ("bert.embeddings.LayerNorm.weight".into(), vec![h]),
        ("bert.embeddings.LayerNorm.bias".into(), vec![h]),
        ("classifier.weight".into(), vec![labels, h]),
        ("classifier.bias".into(), vec![labels]),
    ];
    for l in 0..6 {
        let p = format!("bert.encoder.layer.{l}");
        for lin in [
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
            "attention.output.dense",
        ] {
            want.push((format!("{p}.{lin}.weight"), vec![h, h]));
            want.push((format!("{p}.{lin}.bias"), vec![h]));
        }
        want.push((format!("{p}.intermediate.dense.weight"), vec![ff, h]));
        want.push((format!("{p}.intermediate.dense.bias"), vec![ff]));
        want.push((format!("{p}.output.dense.weight"), vec![h, ff]));
        want.push((format!("{p}.output.dense.bias"), vec![h]));
        for ln in ["attention.output.LayerNorm", "output.LayerNorm"] {
            want.push((format!("{p}.{ln}.weight"), vec![h]));
            want.push((format!("{p}.{ln}.bias"), vec![h]));
        }
    }
    assert_eq!(got.len(), want.len(), "unexpected extra tensors");
    for (name, shape) in want {
        assert_eq!(got.get(&name), Some(&shape), "{name}");
    }
}

#[test]
fn pii_q4_model_truncated_is_an_error() {
    let Some(bytes) = pii_model() else { return };
    for len in [10, bytes.len() / 3, bytes.len() / 2, bytes.len() - 100] {
        assert!(import_onnx(&bytes[..len]).is_err(), "prefix {len}");
    }
}

// ---- memory budget and fuzz seeds ---------------------------------------------------------

fn node(op: &str, inputs: &[&str], out: &str) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![out.to_string()],
        op_type: op.into(),
        ..Default::default()
    }
}

#[test]
fn a_small_file_of_empty_nodes_is_refused_before_decoding() {
    let graph = GraphProto {
        node: vec![NodeProto::default(); 300_000],
        ..Default::default()
    };
    let bytes = encode(graph);
    assert!(bytes.len() < 700_000, "{}", bytes.len());
    // Two bytes in the file, a whole struct (twice, for the vector's growth) once decoded.
    let heap = wire::decoded_heap(&bytes).unwrap();
    assert_eq!(heap, 300_000 * 2 * std::mem::size_of::<NodeProto>() as u64);
    assert!(heap > 20 << 20, "{heap}");
    let e = import_onnx_within(&bytes, ModelType::Bert, heap - 1).unwrap_err();
    assert!(matches!(e, OnnxError::Budget { .. }), "{e}");
    assert!(
        e.to_string().contains("the decoded ONNX graph would take"),
        "{e}"
    );
    // Within a budget that holds it, decoding goes on to the real complaint.
    let e = import_onnx_within(&bytes, ModelType::Bert, heap).unwrap_err();
    assert!(matches!(e, OnnxError::NoEncoder(_)), "{e}");
}

#[test]
fn the_wire_measure_counts_what_prost_allocates() {
    let (bytes, _) = build(Spec::default());
    let heap = wire::decoded_heap(&bytes).unwrap();
    // The mini encoder's payloads are a few kilobytes; structs and names add to that.
    let raw: usize = decode(&bytes)
        .initializer
        .iter()
        .map(|t| t.raw_data.len())
        .sum();
    assert!(
        heap as usize > raw && (heap as usize) < 40 * bytes.len(),
        "{heap} {raw}"
    );
    assert_eq!(wire::decoded_heap(&bytes[..bytes.len() - 1]), None);
}

#[test]
fn a_broadcast_that_would_take_gigabytes_is_refused() {
    // [60000, 1] * [1, 60000] as the word table: 480 KB in the file, 14.4 GB as a product.
    let n = 60_000i64;
    let graph = GraphProto {
        node: vec![
            node("Mul", &["a", "b"], "table"),
            node("Gather", &["table", "input_ids"], "x"),
        ],
        initializer: vec![
            f32s("a", &[n, 1], &vec![1.0; n as usize]),
            f32s("b", &[1, n], &vec![2.0; n as usize]),
        ],
        input: vec![ValueInfoProto {
            name: "input_ids".into(),
        }],
        ..Default::default()
    };
    let e = import_onnx(&encode(graph)).unwrap_err();
    assert!(matches!(e, OnnxError::Budget { .. }), "{e}");
    assert!(e.to_string().contains("the output of node"), "{e}");
}

#[test]
fn a_model_is_imported_within_a_budget_that_holds_it_and_not_a_byte_less() {
    let (bytes, _) = build(Spec::default());
    let all = import_onnx(&bytes).unwrap();
    let total: u64 = all.iter().map(|t| 4 * t.data.len() as u64).sum();
    let heap = wire::decoded_heap(&bytes).unwrap();
    assert!(import_onnx_within(&bytes, ModelType::Bert, heap.max(total)).is_ok());
    let e = import_onnx_within(&bytes, ModelType::Bert, heap.max(total) - 1).unwrap_err();
    assert!(matches!(e, OnnxError::Budget { .. }), "{e}");
}

/// Writes the mini encoders (every weight encoding and head) as seeds of the `onnx` fuzz
/// target into `$WEBERT_FUZZ_SEEDS` (scripts/fuzz.sh runs this).
#[test]
#[ignore]
fn write_fuzz_seeds() {
    let Ok(dir) = std::env::var("WEBERT_FUZZ_SEEDS") else {
        return;
    };
    let encs = [
        Enc::F32,
        Enc::NBits,
        Enc::Integer { signed: true },
        Enc::Integer { signed: false },
        Enc::Dq,
        Enc::CastMul,
        Enc::Bnb4(0),
        Enc::Bnb4(1),
    ];
    let heads = [
        Head::None,
        Head::Token,
        Head::Qa,
        Head::Pooled,
        Head::MaskedLm,
    ];
    std::fs::create_dir_all(&dir).unwrap();
    for (i, enc) in encs.into_iter().enumerate() {
        let table = [Table::F32, Table::GatherDq, Table::CastMul][i % 3];
        let spec = Spec {
            enc,
            table,
            head: heads[i % heads.len()],
            decomposed_ln: i % 2 == 1,
            layers: 1,
            token_types: i % 4 != 3,
        };
        let (bytes, _) = build(spec);
        std::fs::write(format!("{dir}/mini-{i}.onnx"), bytes).unwrap();
    }
}

// ---- real exports of the other families (tests/onnx-exports, scripts/make_tiny_onnx_exports.py)

fn export(folder: &str, file: &str) -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read(
        root.join("tests/onnx-exports")
            .join(folder)
            .join("onnx")
            .join(file),
    )
    .unwrap()
}

/// The folder's safetensors weights, by name.
fn checkpoint(folder: &str) -> crate::model::Weights {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(
        root.join("tests/tiny")
            .join(folder)
            .join("model.safetensors"),
    );
    let mut w = crate::model::Weights::default();
    w.add_safetensors("model.safetensors", &bytes.unwrap())
        .unwrap();
    w
}

#[test]
fn other_families_fp32_exports_name_every_weight_as_their_checkpoint() {
    for (folder, family) in [
        ("mpnet-seqcls", ModelType::MpNet),
        ("mpnet-base-st", ModelType::MpNet),
        ("albert-seqcls", ModelType::Albert),
        ("jina-v2-base", ModelType::JinaBert),
        ("deberta-v3-seqcls", ModelType::DebertaV2),
        ("deberta-v3-tokcls", ModelType::DebertaV2),
    ] {
        let got = import_onnx_as(&export(folder, "model.onnx"), family).unwrap();
        let want = checkpoint(folder);
        let prefixed = format!("{}.", family.prefix());
        for t in &got {
            let bare = t.name.strip_prefix(&prefixed).unwrap_or(&t.name);
            let (_, w) = (want.find(family.prefix(), bare))
                .unwrap_or_else(|| panic!("{folder}: `{}` is not in the checkpoint", t.name));
            assert_eq!(t.shape, w.shape, "{folder}: {}", t.name);
            assert_eq!(t.data, w.data, "{folder}: {}", t.name);
        }
        let names: Vec<&str> = got.iter().map(|t| t.name.as_str()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{folder}: a name twice");
        // Everything but what the export leaves out (Jina's pooler, MPNet's pooler and
        // tied decoder: not used by the exported outputs).
        for name in want.names() {
            let bare = name.strip_prefix(&prefixed).unwrap_or(name);
            let used = got
                .iter()
                .any(|t| t.name.strip_prefix(&prefixed) == Some(bare) || t.name == *name);
            assert!(
                used || name.contains("pooler") || name.starts_with("lm_head"),
                "{folder}: {name} not imported"
            );
        }
        match family {
            ModelType::MpNet => {
                assert!(names.contains(&"mpnet.encoder.relative_attention_bias.weight"))
            }
            ModelType::Albert => {
                // one shared layer, met in each of the 3 layers: 16 tensors, once each
                let shared = names.iter().filter(|n| n.contains("albert_layer_groups.0"));
                assert_eq!(shared.count(), 16);
                assert!(names.contains(&"albert.encoder.embedding_hidden_mapping_in.weight"));
                assert!(names.contains(&"albert.pooler.weight"));
            }
            ModelType::DebertaV2 => {
                // the relative embeddings and their LayerNorm once; each layer's key and query
                // projections once, though each also projects the relative embeddings
                assert!(names.contains(&"deberta.encoder.rel_embeddings.weight"));
                assert!(names.contains(&"deberta.encoder.LayerNorm.weight"));
                let keys = names.iter().filter(|n| n.ends_with("key_proj.weight"));
                assert_eq!(keys.count(), 2, "{folder}");
                assert!(!names.iter().any(|n| n.contains("pos_")));
                assert!(!names.iter().any(|n| n.contains("position_embeddings")));
                if folder.contains("seqcls") {
                    assert!(names.contains(&"pooler.dense.weight"));
                }
            }
            _ => {
                assert!(!names.iter().any(|n| n.contains("position_embeddings")));
                assert!(!names.iter().any(|n| n.contains("gated_layers.bias")));
            }
        }
    }
}

/// The import error of `graph` as `family`.
fn error_as(graph: GraphProto, family: ModelType) -> String {
    match import_onnx_as(&encode(graph), family) {
        Ok(_) => panic!("the graph imports as {family:?}"),
        Err(e) => e.to_string(),
    }
}

/// The first node of `graph` that `pred` picks.
fn node_index(graph: &GraphProto, pred: impl Fn(&NodeProto) -> bool) -> usize {
    graph.node.iter().position(pred).expect("node")
}

#[test]
fn alibi_slopes_must_be_the_hosts() {
    let mut graph = decode(&export("jina-v2-base", "model.onnx"));
    // The slopes: one Constant [heads, 1, 1] = -slope_h (folded `slopes * -1`).
    let i = node_index(&graph, |n| {
        n.op_type == "Constant"
            && n.attribute
                .iter()
                .any(|a| a.t.as_ref().is_some_and(|t| t.dims == [4, 1, 1]))
    });
    let t = graph.node[i].attribute[0].t.as_mut().unwrap();
    let slopes: Vec<f32> = (t.raw_data.chunks_exact(4))
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let host: Vec<f32> = crate::model::positions::alibi_slopes(4)
        .iter()
        .map(|s| -s)
        .collect();
    assert_eq!(slopes, host);
    // Slopes of 8 heads' rule for the first four: refused, naming both.
    let other: Vec<f32> = crate::model::positions::alibi_slopes(8)[..4]
        .iter()
        .map(|s| -s)
        .collect();
    t.raw_data = other.iter().flat_map(|v| v.to_le_bytes()).collect();
    let e = error_as(graph, ModelType::JinaBert);
    assert!(e.contains("ALiBi slopes of 4 heads"), "{e}");
    // No ALiBi term at all: the bias Add bypassed.
    let mut graph = decode(&export("jina-v2-base", "model.onnx"));
    bypass_adds(&mut graph, "/encoder/Cast_2_output_0");
    let e = error_as(graph, ModelType::JinaBert);
    assert!(e.contains("no ALiBi term"), "{e}");
}

#[test]
fn a_constant_alibi_table_is_checked_against_the_host() {
    // The ALiBi term replaced by a constant [1, heads, L, L] (as an export folded for one
    // length): accepted when it is -slope_h · |i - j|, refused otherwise.
    let table = |slopes: &[f32], len: usize| -> Vec<f32> {
        let mut t = Vec::new();
        for s in slopes {
            for i in 0..len {
                t.extend((0..len).map(|j| -s * i.abs_diff(j) as f32));
            }
        }
        t
    };
    let with = |values: &[f32]| {
        let mut graph = decode(&export("jina-v2-base", "model.onnx"));
        graph
            .initializer
            .push(f32s("alibi_folded", &[1, 4, 5, 5], values));
        for n in graph.node.iter_mut().filter(|n| n.op_type == "Add") {
            for i in n
                .input
                .iter_mut()
                .filter(|i| i.ends_with("/encoder/Cast_2_output_0"))
            {
                *i = "alibi_folded".into();
            }
        }
        graph
    };
    let host = crate::model::positions::alibi_slopes(4);
    let ok = encode(with(&table(&host, 5)));
    import_onnx_as(&ok, ModelType::JinaBert).unwrap();
    let halved: Vec<f32> = host.iter().map(|s| s / 2.0).collect();
    let e = error_as(with(&table(&halved, 5)), ModelType::JinaBert);
    assert!(e.contains("constant ALiBi table holds"), "{e}");
}

/// Removes every `Add` of `addend` (a name ending), its readers reading its other input.
fn bypass_adds(graph: &mut GraphProto, addend: &str) {
    let adds = |n: &NodeProto| n.op_type == "Add" && n.input.iter().any(|i| i.ends_with(addend));
    let renames: Vec<(String, String)> = (graph.node.iter().filter(|n| adds(n)))
        .map(|n| {
            let keep = n.input.iter().find(|i| !i.ends_with(addend)).unwrap();
            (n.output[0].clone(), keep.clone())
        })
        .collect();
    assert!(!renames.is_empty());
    graph.node.retain(|n| !adds(n));
    for n in graph.node.iter_mut() {
        for i in n.input.iter_mut() {
            if let Some((_, keep)) = renames.iter().find(|(from, _)| from == i) {
                *i = keep.clone();
            }
        }
    }
}

#[test]
fn the_relative_bias_must_reach_the_scores() {
    let mut graph = decode(&export("mpnet-seqcls", "model.onnx"));
    bypass_adds(&mut graph, "/encoder/Expand_output_0");
    let e = error_as(graph, ModelType::MpNet);
    assert!(e.contains("relative position bias"), "{e}");
    // As a family without one, the table is a weight nobody explains.
    let graph = decode(&export("mpnet-seqcls", "model.onnx"));
    let e = error_as(graph.clone(), ModelType::Roberta);
    assert!(e.contains("relative_attention_bias/Gather"), "{e}");
    let e = error_as(graph, ModelType::DebertaV2);
    assert!(e.contains("adds gathered c2p / p2c products only"), "{e}");
}

#[test]
fn deberta_v1_onnx_is_refused_by_name() {
    let graph = decode(&export("deberta-v3-seqcls", "model.onnx"));
    let e = error_as(graph, ModelType::Deberta);
    assert!(e.contains("Deberta's head-interleaved in_proj"), "{e}");
}

#[test]
fn deberta_disentangled_terms_are_checked() {
    // The quantized files name the same weights: the key / query projections that also
    // project the relative embeddings (the same quantized initializer, read twice) once.
    let names = |file: &str| {
        let got = import_onnx_as(&export("deberta-v3-seqcls", file), ModelType::DebertaV2);
        let mut names: Vec<String> = got.unwrap().into_iter().map(|t| t.name).collect();
        names.sort();
        names
    };
    let fp32 = names("model.onnx");
    assert_eq!(names("model_quantized.onnx"), fp32);
    assert_eq!(names("model_q4.onnx"), fp32);
    // Without its p2c term, layer 0's scores lack what K's second product should add.
    let mut graph = decode(&export("deberta-v3-seqcls", "model.onnx"));
    let layer0 = "/model/deberta/encoder/layer.0/attention/self/";
    let add3 = node_index(&graph, |n| n.name == format!("{layer0}Add_3"));
    let (from, to) = (
        graph.node[add3].output[0].clone(),
        graph.node[add3].input[0].clone(),
    );
    for n in graph.node.iter_mut() {
        for i in n.input.iter_mut().filter(|i| **i == from) {
            *i = to.clone();
        }
    }
    let e = error_as(graph, ModelType::DebertaV2);
    assert!(e.contains("the p2c product is not added"), "{e}");
    // A product added without its relative-distance gather.
    let mut graph = decode(&export("deberta-v3-seqcls", "model.onnx"));
    let gather = node_index(&graph, |n| n.name == format!("{layer0}GatherElements"));
    let (from, to) = (
        graph.node[gather].output[0].clone(),
        graph.node[gather].input[0].clone(),
    );
    for n in graph.node.iter_mut() {
        for i in n.input.iter_mut().filter(|i| **i == from) {
            *i = to.clone();
        }
    }
    let e = error_as(graph, ModelType::DebertaV2);
    assert!(e.contains("without being gathered"), "{e}");
    // As a family without disentangled attention, the relative projections are unexplained.
    let graph = decode(&export("deberta-v3-seqcls", "model.onnx"));
    assert!(import_onnx_as(&encode(graph), ModelType::Bert).is_err());
}

#[test]
fn the_gated_mlp_activates_its_first_half() {
    // Swap the halves: the activation now runs on the second half of `gated_layers`.
    let mut graph = decode(&export("jina-v2-base", "model.onnx"));
    let slices: Vec<usize> = (0..graph.node.len())
        .filter(|&i| graph.node[i].op_type == "Slice" && graph.node[i].name.contains("layer.0/mlp"))
        .collect();
    assert_eq!(slices.len(), 2);
    let (a, b) = (slices[0], slices[1]);
    let (ia, ib) = (graph.node[a].input.clone(), graph.node[b].input.clone());
    graph.node[a].input = ib;
    graph.node[b].input = ia;
    let e = error_as(graph, ModelType::JinaBert);
    assert!(e.contains("of the gated MLP"), "{e}");
    // q8 and q4 exports import (the split follows the rescaled integer product).
    for file in ["model_quantized.onnx", "model_q4.onnx"] {
        import_onnx_as(&export("jina-v2-base", file), ModelType::JinaBert).unwrap();
    }
}

#[test]
fn a_shared_weight_met_again_quantized_keeps_the_f32_one() {
    let (k, n) = (4usize, 2usize);
    let plain: Vec<f32> = values(n * k, 5);
    let scale = 0.05f32;
    let codes: Vec<i32> = plain.iter().map(|v| (v / scale).round() as i32).collect();
    let deq: Vec<f32> = codes.iter().map(|&c| c as f32 * scale).collect();
    // Only the scales matter here (one per output row).
    let q = crate::model::weights::ChannelQuant {
        signed: true,
        codes: codes.iter().map(|&c| c as i8 as u8).collect(),
        scales: vec![scale; n],
        zero_points: vec![0; n],
    };
    let quantized = ImportedTensor {
        name: "w".into(),
        shape: vec![n, k],
        data: deq.clone(),
        quant: Some(Quant::Channel(q)),
    };
    let f32_value = Value::new("b", vec![n, k], plain.clone());
    assert_eq!(same_weight(&quantized, &f32_value), Same::KeepSecond);
    let far = Value::new("c", vec![n, k], plain.iter().map(|v| v + 0.1).collect());
    assert_eq!(same_weight(&quantized, &far), Same::Differ);
    let equal = Value::new("d", vec![n, k], deq);
    assert_eq!(same_weight(&quantized, &equal), Same::Equal);
    let plain_first = ImportedTensor {
        quant: None,
        data: plain,
        ..quantized
    };
    assert_eq!(same_weight(&plain_first, &far), Same::Differ);
}

#[test]
fn a_transpose_of_data_that_disagrees_with_its_shape_is_refused() {
    let err = ops::transpose2("w", &[1.0; 5], 2, 3).unwrap_err();
    assert!(
        matches!(&err, OnnxError::Tensor { tensor, .. } if tensor == "w"),
        "{err}"
    );
    assert!(err.to_string().contains("5 values"), "{err}");
    let t = ops::transpose2("w", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3).unwrap();
    assert_eq!(t, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
}
