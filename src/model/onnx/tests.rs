use super::proto::{dtype, AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto};
use super::*;
use prost::Message;

// ---- tiny model builders -------------------------------------------------------------

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

fn int(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i,
        ..Default::default()
    }
}

fn node(op: &str, name: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: name.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![format!("{name}_out")],
        domain: if matches!(op, "MatMulNBits" | "GatherBlockQuantized") {
            "com.microsoft".into()
        } else {
            String::new()
        },
        attribute: attrs,
    }
}

fn model(nodes: Vec<NodeProto>, inits: Vec<TensorProto>) -> Vec<u8> {
    let graph = GraphProto {
        node: nodes,
        initializer: inits,
        ..Default::default()
    };
    ModelProto {
        ir_version: 8,
        graph: Some(graph),
    }
    .encode_to_vec()
}

fn import(bytes: &[u8]) -> HashMap<String, ImportedTensor> {
    import_onnx(bytes)
        .expect("import")
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect()
}

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

fn pack_nibbles(v: &[u32]) -> Vec<u8> {
    v.chunks(2)
        .map(|c| (c[0] | c.get(1).copied().unwrap_or(0) << 4) as u8)
        .collect()
}

enum Zp {
    None,
    Packed,
    Float,
}

/// MatMulNBits with K not a multiple of block_size; checks against a direct formula.
fn check_nbits(zp_kind: Zp) {
    let (k, n, bs) = (40usize, 3usize, 16usize);
    let blocks = k.div_ceil(bs); // 3, last block half padding
    let q = lcg(n * blocks * bs, 7, 16);
    let scales: Vec<f32> = (0..n * blocks).map(|i| 0.01 * (i as f32 + 1.0)).collect();
    let zps = lcg(n * blocks, 11, 16);
    let mut inits = vec![
        u8s(
            "onnx::MatMul_9_Q4",
            &[n as i64, blocks as i64, (bs / 2) as i64],
            &pack_nibbles(&q),
        ),
        f32s("onnx::MatMul_9_scales", &[(n * blocks) as i64], &scales),
    ];
    let mut inputs = vec!["x", "onnx::MatMul_9_Q4", "onnx::MatMul_9_scales"];
    let zp_of = |row: usize, b: usize| match zp_kind {
        Zp::None => 8.0,
        _ => zps[row * blocks + b] as f32,
    };
    match zp_kind {
        Zp::None => {}
        Zp::Packed => {
            // Each row packs its 3 zero points into 2 bytes.
            let packed: Vec<u8> = zps.chunks(blocks).flat_map(pack_nibbles).collect();
            inits.push(u8s("zp", &[packed.len() as i64], &packed));
            inputs.push("zp");
        }
        Zp::Float => {
            let z: Vec<f32> = zps.iter().map(|&z| z as f32).collect();
            inits.push(f32s("zp", &[n as i64, blocks as i64], &z));
            inputs.push("zp");
        }
    }
    let attrs = vec![
        int("K", k as i64),
        int("N", n as i64),
        int("bits", 4),
        int("block_size", bs as i64),
    ];
    let nodes = vec![node(
        "MatMulNBits",
        "/encoder/layer.0/ffn/lin1/MatMul_Q4",
        &inputs,
        attrs,
    )];
    let out = import(&model(nodes, inits));
    let w = &out["encoder.layer.0.ffn.lin1.weight"];
    assert_eq!(w.shape, [n, k]);
    for row in 0..n {
        for col in 0..k {
            let b = col / bs;
            let want = (q[(row * blocks + b) * bs + col % bs] as f32 - zp_of(row, b))
                * scales[row * blocks + b];
            assert_eq!(w.data[row * k + col], want, "row {row} col {col}");
        }
    }
}

#[test]
fn matmul_nbits_default_zero_point() {
    check_nbits(Zp::None);
}

#[test]
fn matmul_nbits_packed_zero_points() {
    check_nbits(Zp::Packed);
}

#[test]
fn matmul_nbits_float_zero_points() {
    check_nbits(Zp::Float);
}

#[test]
fn dequantize_linear_per_axis_feeding_matmul() {
    // [in=2, out=3] int8 weight quantized per output column (axis 1).
    let q: [i8; 6] = [-3, 0, 5, 7, -128, 127];
    let inits = vec![
        tensor(
            "onnx::MatMul_5_quantized",
            &[2, 3],
            dtype::INT8,
            q.iter().map(|&v| v as u8).collect(),
        ),
        f32s("s", &[3], &[0.5, 0.25, 2.0]),
        tensor("z", &[3], dtype::INT8, vec![1, 0, 255]), // -1 as int8
    ];
    let nodes = vec![
        node(
            "DequantizeLinear",
            "dq",
            &["onnx::MatMul_5_quantized", "s", "z"],
            vec![int("axis", 1)],
        ),
        node(
            "MatMul",
            "/roberta/encoder/layer.1/output/dense/MatMul",
            &["h", "dq_out"],
            vec![],
        ),
    ];
    let out = import(&model(nodes, inits));
    let w = &out["roberta.encoder.layer.1.output.dense.weight"];
    assert_eq!(w.shape, [3, 2]); // transposed to [out, in]
    let (s, z) = ([0.5, 0.25, 2.0], [1.0, 0.0, -1.0]);
    for o in 0..3 {
        for i in 0..2 {
            assert_eq!(w.data[o * 2 + i], (q[i * 3 + o] as f32 - z[o]) * s[o]);
        }
    }
}

#[test]
fn quantized_embeddings_gather_then_dequantize() {
    let table: Vec<u8> = (0..12).collect();
    let inits = vec![
        u8s(
            "bert.embeddings.word_embeddings.weight_quantized",
            &[4, 3],
            &table,
        ),
        f32s("scale", &[], &[0.5]),
        u8s("zp", &[], &[3]),
        // Constant index tensor for an unrelated Gather: must not be imported.
        tensor("idx", &[2], dtype::INT32, vec![0; 8]),
    ];
    let nodes = vec![
        node(
            "Gather",
            "/bert/embeddings/word_embeddings/Gather",
            &["bert.embeddings.word_embeddings.weight_quantized", "ids"],
            vec![],
        ),
        node(
            "DequantizeLinear",
            "dq",
            &["/bert/embeddings/word_embeddings/Gather_out", "scale", "zp"],
            vec![],
        ),
        node("Gather", "/bert/Gather", &["shape", "idx"], vec![]),
    ];
    let out = import(&model(nodes, inits));
    assert_eq!(out.len(), 1);
    let w = &out["bert.embeddings.word_embeddings.weight"];
    assert_eq!(w.shape, [4, 3]);
    assert_eq!(
        w.data,
        table
            .iter()
            .map(|&q| (q as f32 - 3.0) * 0.5)
            .collect::<Vec<_>>()
    );
}

#[test]
fn dequantize_linear_per_tensor_before_gather() {
    let inits = vec![
        u8s("q", &[2, 2], &[0, 10, 20, 255]),
        f32s("s", &[], &[0.1]),
        u8s("z", &[], &[10]),
    ];
    let nodes = vec![
        node("DequantizeLinear", "dq", &["q", "s", "z"], vec![]),
        node(
            "Gather",
            "/electra/embeddings/position_embeddings/Gather",
            &["dq_out", "pos"],
            vec![],
        ),
    ];
    let out = import(&model(nodes, inits));
    let w = &out["electra.embeddings.position_embeddings.weight"];
    assert_eq!(
        w.data,
        [
            (0.0 - 10.0) * 0.1,
            0.0,
            (20.0 - 10.0) * 0.1,
            (255.0 - 10.0) * 0.1
        ]
    );
}

#[test]
fn f16_layernorm_gemm_and_bias_naming() {
    let h = |v: f32| half::f16::from_f32(v).to_bits().to_le_bytes();
    let ln_w: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|&v| h(v)).collect();
    let inits = vec![
        tensor(
            "distilbert.embeddings.LayerNorm.weight",
            &[2],
            dtype::FLOAT16,
            ln_w,
        ),
        f32s("distilbert.embeddings.LayerNorm.bias", &[2], &[0.25, 0.5]),
        f32s("onnx::Add_7", &[2], &[3.0, 4.0]),
        f32s("eps", &[], &[1e-12]),
        f32s("pre_classifier.weight", &[2, 3], &[1., 2., 3., 4., 5., 6.]), // [out, in], transB=1
        f32s("pre_classifier.bias", &[2], &[7., 8.]),
    ];
    let nodes = vec![
        node(
            "LayerNormalization",
            "/distilbert/embeddings/LayerNorm/LayerNormalization",
            &[
                "x",
                "distilbert.embeddings.LayerNorm.weight",
                "distilbert.embeddings.LayerNorm.bias",
            ],
            vec![],
        ),
        node(
            "Add",
            "/distilbert/transformer/layer.0/attention/q_lin/Add",
            &["onnx::Add_7", "mm"],
            vec![],
        ),
        node(
            "Add",
            "/distilbert/transformer/layer.0/sa_layer_norm/Add",
            &["var", "eps"],
            vec![],
        ),
        node(
            "Gemm",
            "/pre_classifier/Gemm",
            &["y", "pre_classifier.weight", "pre_classifier.bias"],
            vec![int("transB", 1)],
        ),
    ];
    let out = import(&model(nodes, inits));
    assert_eq!(out.len(), 5, "{:?}", out.keys());
    assert_eq!(
        out["distilbert.embeddings.LayerNorm.weight"].data,
        [1.5, -2.0]
    );
    assert_eq!(
        out["distilbert.transformer.layer.0.attention.q_lin.bias"].data,
        [3.0, 4.0]
    );
    assert_eq!(out["pre_classifier.weight"].shape, [2, 3]);
    assert_eq!(out["pre_classifier.weight"].data, [1., 2., 3., 4., 5., 6.]);
    assert_eq!(out["pre_classifier.bias"].data, [7., 8.]);
}

#[test]
fn gather_block_quantized_uint8() {
    // 2 rows x 32 columns, block 16 → scales [2, 2], packed zero points [2, 1].
    let q = lcg(64, 3, 16);
    let inits = vec![
        u8s("emb", &[2, 16], &pack_nibbles(&q)),
        f32s("emb_scales", &[2, 2], &[1.0, 2.0, 3.0, 4.0]),
        u8s("emb_zp", &[2, 1], &[0x21, 0x43]),
    ];
    let attrs = vec![
        int("bits", 4),
        int("block_size", 16),
        int("quantize_axis", 1),
    ];
    let nodes = vec![node(
        "GatherBlockQuantized",
        "/bert/embeddings/word_embeddings/Gather",
        &["emb", "ids", "emb_scales", "emb_zp"],
        attrs,
    )];
    let out = import(&model(nodes, inits));
    let w = &out["bert.embeddings.word_embeddings.weight"];
    assert_eq!(w.shape, [2, 32]);
    let zp = [1.0, 2.0, 3.0, 4.0];
    for (i, &v) in w.data.iter().enumerate() {
        let b = (i / 32) * 2 + (i % 32) / 16;
        assert_eq!(v, (q[i] as f32 - zp[b]) * (b as f32 + 1.0));
    }
}

#[test]
fn matmul_integer_dynamic_quantization() {
    let inits = vec![
        u8s("onnx::MatMul_3_quantized", &[2, 2], &[10, 20, 30, 40]),
        f32s("onnx::MatMul_3_scale", &[], &[0.5]),
        u8s("onnx::MatMul_3_zero_point", &[], &[20]),
    ];
    let mut mm = node(
        "MatMulInteger",
        "/bert/pooler/dense/MatMul_quant",
        &[
            "a_q",
            "onnx::MatMul_3_quantized",
            "a_zp",
            "onnx::MatMul_3_zero_point",
        ],
        vec![],
    );
    mm.output = vec!["mm_i32".into()];
    let mut cast = node("Cast", "cast", &["mm_i32"], vec![int("to", 1)]);
    cast.output = vec!["mm_f".into()];
    let mut scales = node(
        "Mul",
        "scales_mul",
        &["a_scale", "onnx::MatMul_3_scale"],
        vec![],
    );
    scales.output = vec!["s".into()];
    let out_mul = node("Mul", "out_mul", &["mm_f", "s"], vec![]);
    let out = import(&model(vec![mm, cast, scales, out_mul], inits));
    assert_eq!(out.len(), 1, "{:?}", out.keys());
    let w = &out["bert.pooler.dense.weight"];
    assert_eq!(w.data, [-5.0, 5.0, 0.0, 10.0]); // transposed [[10,30],[20,40]] - 20, * 0.5
}

#[test]
fn dequantize_linear_blocked_int4() {
    // [in=4, out=2] int4 weight, blocks of 2 along axis 0 → scale [2, 2].
    let q: [i8; 8] = [-8, 7, -1, 0, 3, -4, 5, 6];
    let packed: Vec<u8> = q
        .chunks(2)
        .map(|c| (c[0] as u8 & 0xf) | ((c[1] as u8) << 4))
        .collect();
    let inits = vec![
        tensor("w", &[4, 2], dtype::INT4, packed),
        f32s("s", &[2, 2], &[1.0, 2.0, 3.0, 4.0]),
    ];
    let dq = node(
        "DequantizeLinear",
        "dq",
        &["w", "s"],
        vec![int("axis", 0), int("block_size", 2)],
    );
    let nodes = vec![dq, node("MatMul", "/lin/MatMul", &["x", "dq_out"], vec![])];
    let w = &import(&model(nodes, inits))["lin.weight"];
    assert_eq!(w.shape, [2, 4]);
    let s = |i: usize, o: usize| [1.0, 2.0, 3.0, 4.0][(i / 2) * 2 + o];
    for o in 0..2 {
        for i in 0..4 {
            assert_eq!(w.data[o * 4 + i], q[i * 2 + o] as f32 * s(i, o));
        }
    }
}

// ---- malformed input -----------------------------------------------------------------

fn small_model() -> Vec<u8> {
    let q = lcg(2 * 2 * 16, 5, 16);
    let inits = vec![
        u8s("B", &[2, 2, 8], &pack_nibbles(&q)),
        f32s("S", &[4], &[1.0, 2.0, 3.0, 4.0]),
        f32s("bias", &[2], &[1.0, 2.0]),
    ];
    let attrs = vec![
        int("K", 32),
        int("N", 2),
        int("bits", 4),
        int("block_size", 16),
    ];
    let nodes = vec![
        node("MatMulNBits", "/m/dense/MatMul_Q4", &["x", "B", "S"], attrs),
        node(
            "Add",
            "/m/dense/Add",
            &["bias", "/m/dense/MatMul_Q4_out"],
            vec![],
        ),
    ];
    model(nodes, inits)
}

#[test]
fn truncated_or_corrupt_bytes_never_panic() {
    let bytes = small_model();
    assert_eq!(import_onnx(&bytes).unwrap().len(), 2);
    let mut errors = 0;
    for len in 0..bytes.len() {
        errors += import_onnx(&bytes[..len]).is_err() as usize;
    }
    assert!(
        errors > bytes.len() / 2,
        "only {errors} of {} prefixes rejected",
        bytes.len()
    );
    for seed in 0..200u32 {
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
fn inconsistent_tensors_are_errors() {
    // raw_data shorter than the dims say.
    let bad = model(
        vec![node(
            "LayerNormalization",
            "/ln/LayerNormalization",
            &["x", "w"],
            vec![],
        )],
        vec![f32s("w", &[3], &[1.0])],
    );
    let err = import_onnx(&bad).unwrap_err();
    assert!(
        matches!(&err, OnnxError::Tensor { tensor, .. } if tensor == "w"),
        "{err}"
    );

    // MatMulNBits whose B does not match K/N.
    let attrs = vec![int("K", 64), int("N", 2), int("block_size", 16)];
    let bad = model(
        vec![node("MatMulNBits", "/m/MatMul_Q4", &["x", "B", "S"], attrs)],
        vec![u8s("B", &[2, 2, 8], &[0; 32]), f32s("S", &[4], &[1.0; 4])],
    );
    let err = import_onnx(&bad).unwrap_err();
    assert!(
        matches!(&err, OnnxError::Node { node, .. } if node == "/m/MatMul_Q4"),
        "{err}"
    );

    // External data.
    let mut ext = f32s("w", &[1], &[]);
    ext.data_location = 1;
    let err = import_onnx(&model(vec![], vec![ext])).unwrap_err();
    assert!(
        matches!(err, OnnxError::ExternalData(ref t) if t == "w"),
        "{err}"
    );

    // Two different tensors claiming one name.
    let nodes = vec![
        node("Add", "/a/dense/Add", &["b1", "x"], vec![]),
        node("Add", "/a/dense/Add_1", &["b2", "x"], vec![]),
    ];
    let dup = model(
        nodes,
        vec![f32s("b1", &[2], &[1.0, 2.0]), f32s("b2", &[2], &[3.0, 4.0])],
    );
    assert!(matches!(
        import_onnx(&dup),
        Err(OnnxError::DuplicateName { .. })
    ));

    // Fused onnxruntime op holding weights.
    let mut fused = node(
        "SkipLayerNormalization",
        "SkipLayerNorm_1",
        &["x", "s", "g"],
        vec![],
    );
    fused.domain = "com.microsoft".into();
    let err = import_onnx(&model(vec![fused], vec![f32s("g", &[2], &[1.0, 1.0])])).unwrap_err();
    assert!(matches!(err, OnnxError::UnsupportedOp { .. }), "{err}");
}

#[test]
fn hostile_attributes_are_errors() {
    let b = u8s("B", &[2, 1, 8], &[0x11; 16]);
    let s = f32s("S", &[2], &[1.0, 1.0]);
    let cases = [
        (i64::MAX, 2, 4, 16),
        (16, i64::MAX, 4, 16),
        (16, 2, 4, 0),
        (16, 2, 3, 16),
        (16, 2, 4, i64::MAX),
        (16, 2, 4, -16),
        (0, 2, 4, 16),
        (16, 0, 4, 16),
    ];
    for (k, n, bits, bs) in cases {
        let attrs = vec![
            int("K", k),
            int("N", n),
            int("bits", bits),
            int("block_size", bs),
        ];
        let m = model(
            vec![node("MatMulNBits", "/m/MatMul_Q4", &["x", "B", "S"], attrs)],
            vec![b.clone(), s.clone()],
        );
        assert!(
            import_onnx(&m).is_err(),
            "K={k} N={n} bits={bits} block_size={bs}"
        );
    }
    // Huge dims with no data, bad axis, bad GatherBlockQuantized shapes.
    let huge = model(
        vec![node("Gather", "/g/Gather", &["t", "i"], vec![])],
        vec![f32s("t", &[i64::MAX, 4], &[])],
    );
    assert!(import_onnx(&huge).is_err());
    let dq = model(
        vec![
            node("DequantizeLinear", "dq", &["q", "s"], vec![int("axis", 5)]),
            node("MatMul", "/l/MatMul", &["x", "dq_out"], vec![]),
        ],
        vec![
            u8s("q", &[2, 2], &[1, 2, 3, 4]),
            f32s("s", &[2], &[1.0, 2.0]),
        ],
    );
    assert!(matches!(import_onnx(&dq), Err(OnnxError::Node { .. })));
    let gbq = model(
        vec![node(
            "GatherBlockQuantized",
            "/e/Gather",
            &["t", "i", "s"],
            vec![int("block_size", 16)],
        )],
        vec![u8s("t", &[2, 8], &[0; 16]), f32s("s", &[2, 5], &[1.0; 10])],
    );
    assert!(import_onnx(&gbq).is_err());
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
    let tensors = import_onnx(&bytes).expect("import PII model");
    let want = reference["tensors"].as_array().unwrap();
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
