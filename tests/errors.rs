//! Bad model folders, bad options and hostile texts give clear errors, never panics.

mod common;
use common::*;
use pollster::block_on;
use std::path::{Path, PathBuf};
use webert::cpu::kernels;
use webert::exec::{Batch, Quantized, Want};
use webert::tasks::{classify, embed, fill_mask, ner, qa, zero_shot};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("webert-err-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn copy(from: &Path, to: &Path, files: &[&str]) {
    for f in files {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

fn load_err(dir: &Path) -> String {
    match try_engine(dir) {
        Ok(_) => panic!("{} loaded but should not", dir.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn broken_model_folders_name_what_is_wrong() {
    let minilm = model_dir("minilm");
    let empty = scratch("empty");
    assert!(load_err(&empty).contains("config.json"));
    assert!(load_err(&empty.join("missing")).contains("missing"));

    let no_tok = scratch("notok");
    copy(&minilm, &no_tok, &["config.json", "model.safetensors"]);
    assert!(load_err(&no_tok).contains("tokenizer.json"));

    let no_weights = scratch("noweights");
    copy(&minilm, &no_weights, &["config.json", "tokenizer.json"]);
    assert!(load_err(&no_weights).contains("no weights"));

    let corrupt = scratch("corrupt");
    copy(&minilm, &corrupt, &["config.json", "tokenizer.json"]);
    std::fs::write(
        corrupt.join("model.safetensors"),
        b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":",
    )
    .unwrap();
    assert!(
        load_err(&corrupt).contains("safetensors"),
        "{}",
        load_err(&corrupt)
    );

    let config = std::fs::read_to_string(minilm.join("config.json")).unwrap();
    let edit = |name: &str, from: &str, to: &str| {
        let dir = scratch(name);
        copy(&minilm, &dir, &["tokenizer.json"]);
        std::os::unix::fs::symlink(
            minilm.join("model.safetensors"),
            dir.join("model.safetensors"),
        )
        .unwrap();
        assert!(config.contains(from), "{from}");
        std::fs::write(dir.join("config.json"), config.replace(from, to)).unwrap();
        load_err(&dir)
    };
    assert!(edit(
        "gpt2",
        "\"model_type\": \"bert\"",
        "\"model_type\": \"gpt2\""
    )
    .contains("supported: bert"));
    assert!(edit("mc", "\"BertModel\"", "\"BertForMultipleChoice\"").contains("ForMultipleChoice"));
    // A supported head whose tensors the checkpoint lacks (MiniLM has a pooler, no NSP layer).
    assert!(
        edit("nsp", "\"BertModel\"", "\"BertForNextSentencePrediction\"")
            .contains("cls.seq_relationship.weight")
    );
    let shape = edit(
        "shape",
        "\"intermediate_size\": 1536",
        "\"intermediate_size\": 1000",
    );
    assert!(
        shape.contains("encoder.layer.0.intermediate.dense.weight") && shape.contains("1536"),
        "{shape}"
    );
    let missing = edit("head", "\"BertModel\"", "\"BertForTokenClassification\"");
    assert!(missing.contains("classifier.weight"), "{missing}");
    assert!(edit("json", "{", "[").contains("config.json"));
    assert!(edit(
        "heads",
        "\"num_attention_heads\": 12",
        "\"num_attention_heads\": 7"
    )
    .contains("divisible"));
    assert!(edit(
        "act",
        "\"hidden_act\": \"gelu\"",
        "\"hidden_act\": \"mish\""
    )
    .contains("hidden_act"));
}

#[test]
fn truncated_onnx_is_an_error() {
    let pii = model_dir("pii");
    let dir = scratch("onnx");
    copy(
        &pii,
        &dir,
        &["config.json", "tokenizer.json", "tokenizer_config.json"],
    );
    std::fs::create_dir_all(dir.join("onnx")).unwrap();
    let bytes = std::fs::read(pii.join("onnx/model_q4.onnx")).unwrap();
    std::fs::write(dir.join("onnx/model_q4.onnx"), &bytes[..bytes.len() / 3]).unwrap();
    let err = load_err(&dir);
    assert!(
        err.contains("ONNX") && err.contains("model_q4.onnx"),
        "{err}"
    );
}

#[test]
fn wrong_task_and_bad_options_are_errors() {
    let e = engine(&model_dir("minilm"));
    let err = block_on(ner::ner(&e, "John", &ner::NerOptions::default()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("token-classification") && err.contains("BertModel"),
        "{err}"
    );
    assert!(block_on(classify::classify(&e, &[("x", None)], Default::default())).is_err());
    assert!(block_on(qa::answer(&e, "q", "c", &Default::default())).is_err());
    assert!(block_on(fill_mask::fill_mask(&e, "a [MASK]", 5, None)).is_err());
    assert!(block_on(zero_shot::zero_shot(&e, "text", &[], &Default::default())).is_err());
    let bad_template = zero_shot::ZeroShotOptions {
        hypothesis_template: "no slot".into(),
        multi_label: false,
        truncation: None,
    };
    assert!(block_on(zero_shot::zero_shot(&e, "text", &["a"], &bad_template)).is_err());
    let pooling = webert::error::parse_name::<embed::Pooling>("pooling", "median").unwrap_err();
    assert!(pooling.to_string().contains("`mean`"), "{pooling}");
    let agg = webert::error::parse_name::<ner::Aggregation>("aggregation", "sum").unwrap_err();
    assert!(
        agg.to_string().contains("unknown value `sum`") && agg.to_string().contains("`first`"),
        "{agg}"
    );
    let isa = webert::cpu::kernels::by_name("avx2x").unwrap_err();
    assert!(isa.to_string().contains("scalar"), "{isa}");

    let long = "word ".repeat(2000);
    let err = block_on(embed::embed(&e, &[&long], Default::default()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("2002 tokens") && err.contains("512"), "{err}");
    // The message names the option that cuts it, in both faces.
    assert!(
        err.contains("`truncation: true` in JS, --truncate in the CLI"),
        "{err}"
    );
    let opts = embed::EmbedOptions {
        truncation: Some(usize::MAX),
        ..Default::default()
    };
    assert_eq!(
        block_on(embed::embed(&e, &[&long], opts)).unwrap()[0].len(),
        384
    );

    let pii = engine(&model_dir("pii"));
    let tight = ner::NerOptions {
        stride: 200,
        max_len: Some(128),
        ..Default::default()
    };
    assert!(block_on(ner::ner(&pii, &long, &tight))
        .unwrap_err()
        .to_string()
        .contains("stride"));

    let qa_model = engine(&with_head("qa"));
    let small = qa::QaOptions {
        max_seq_len: Some(8),
        doc_stride: Some(4),
        ..Default::default()
    };
    let err = block_on(qa::answer(
        &qa_model,
        "what is the name of the long question here",
        "ctx",
        &small,
    ))
    .unwrap_err();
    assert!(err.to_string().contains("question"), "{err}");
    assert!(block_on(qa::answer(&qa_model, "   ", "ctx", &Default::default())).is_err());
    let zero = qa::QaOptions {
        top_k: 0,
        ..Default::default()
    };
    assert!(block_on(qa::answer(&qa_model, "q", "c", &zero)).is_err());
}

const HOSTILE: &[&str] = &[
    "",
    " ",
    "\n\t\r",
    "\u{0}\u{1}\u{7f}",
    "🤗🤗🤗",
    "e\u{301}\u{301}\u{301}",
    "\u{200b}\u{200d}\u{feff}",
    "مرحبا بالعالم",
    "日本語のテキスト",
    "[CLS] [SEP] [PAD] [MASK] [UNK]",
    "a\u{0}b",
];

#[test]
fn hostile_texts_never_panic() {
    let pii = engine(&model_dir("pii"));
    let minilm = engine(&model_dir("minilm"));
    let qa_model = engine(&with_head("qa"));
    let cls = engine(&with_head("seqcls"));
    let splade = engine(&model_dir("splade-tiny"));
    let long = "x".repeat(5000) + &" John Smith".repeat(300);
    let mut texts: Vec<&str> = HOSTILE.to_vec();
    texts.push(&long);
    for t in texts {
        for agg in ["none", "simple", "first", "average", "max"] {
            let opts = ner::NerOptions {
                aggregation: webert::error::parse_name("aggregation", agg).unwrap(),
                ..Default::default()
            };
            let ents = block_on(ner::ner(&pii, t, &opts)).unwrap();
            let n = t.chars().count();
            assert!(ents.iter().all(|e| e.start <= e.end && e.end <= n), "{t:?}");
        }
        let trunc = Some(usize::MAX);
        block_on(embed::embed(
            &minilm,
            &[t],
            embed::EmbedOptions {
                truncation: trunc,
                ..Default::default()
            },
        ))
        .unwrap();
        block_on(classify::classify(
            &cls,
            &[(t, Some(t))],
            classify::ClassifyOptions {
                truncation: trunc,
                ..Default::default()
            },
        ))
        .unwrap();
        let _ = block_on(qa::answer(&qa_model, "who?", t, &Default::default()));
        let _ = block_on(qa::answer(&qa_model, t, "context", &Default::default()));
        let _ = block_on(fill_mask::fill_mask(&splade, t, 3, trunc));
        let zs = zero_shot::ZeroShotOptions {
            truncation: trunc,
            ..Default::default()
        };
        block_on(zero_shot::zero_shot(&minilm, t, &["a", t], &zs)).unwrap();
    }
}

#[test]
fn every_kernel_gives_the_same_hidden_states() {
    let dir = model_dir("minilm");
    let build = |k| cpu_executor(&dir, k, Quantized::F32);
    let (mut reference, tok) = build(kernels::available()[0]);
    let enc = tok
        .encode(
            "Kernels must agree: AVX-512, AVX2, NEON, simd128 and scalar.",
            None,
        )
        .unwrap();
    let other = tok.encode("short", None).unwrap();
    let l = enc.len();
    let mut ids = enc.get_ids().to_vec();
    ids.extend(other.get_ids());
    ids.resize(2 * l, tok.pad_id);
    let batch = Batch {
        ids,
        type_ids: vec![0; 2 * l],
        lens: vec![l, other.len()],
        seq_len: l,
        picked: vec![],
    };
    let reference = reference
        .forward(&batch, Want::Hidden)
        .unwrap()
        .hidden
        .unwrap();
    for k in kernels::available().into_iter().skip(1) {
        let hidden = build(k)
            .0
            .forward(&batch, Want::Hidden)
            .unwrap()
            .hidden
            .unwrap();
        let h = 384;
        let real: Vec<usize> = (0..l * h).chain(l * h..(l + other.len()) * h).collect();
        let diff = real
            .iter()
            .map(|&i| (hidden[i] - reference[i]).abs())
            .fold(0.0, f32::max);
        assert!(
            diff < 1e-4,
            "{} vs {}: {diff}",
            k.name,
            kernels::available()[0].name
        );
    }
}

/// A EuroBERT config that switches on biases its checkpoint lacks: the first missing
/// tensor is named.
#[test]
fn eurobert_missing_bias_is_named() {
    let from = root().join("tests/tiny/eurobert-mlm");
    let dir = scratch("eurobert-bias");
    copy(
        &from,
        &dir,
        &[
            "tokenizer.json",
            "tokenizer_config.json",
            "model.safetensors",
        ],
    );
    let config = std::fs::read_to_string(from.join("config.json")).unwrap();
    let edited = config.replace("\"attention_bias\": false", "\"attention_bias\": true");
    assert_ne!(edited, config);
    std::fs::write(dir.join("config.json"), edited).unwrap();
    let got = load_err(&dir);
    assert!(got.contains("layers.0.self_attn.q_proj.bias"), "{got}");
}

/// Configs of the newer families: a missing key is named, and what is not built (DeBERTa's
/// convolution and `p2p`, ALBERT's layer groups, BERT's relative_key positions, Jina's
/// SwiGLU) is refused at load by name.
#[test]
fn newer_family_configs_name_what_is_missing_or_not_built() {
    use webert::model::ModelConfig;
    type Config = serde_json::Map<String, serde_json::Value>;
    type Edit<'a> = &'a dyn Fn(&mut Config);
    let config = |name: &str| {
        let path = root().join("tests/tiny").join(name).join("config.json");
        let text = std::fs::read_to_string(path).unwrap();
        serde_json::from_str::<Config>(&text).unwrap()
    };
    let err = |name: &str, edit: Edit| {
        let mut c = config(name);
        edit(&mut c);
        let text = serde_json::to_string(&c).unwrap();
        match ModelConfig::from_json("config.json", &text) {
            Ok(_) => panic!("{name}: an edited config loaded"),
            Err(e) => e.to_string(),
        }
    };
    let cases: [(&str, Edit, &str); 26] = [
        ("mpnet-mlm", &|c| drop(c.remove("vocab_size")), "missing `vocab_size`"),
        (
            "mpnet-mlm",
            &|c| drop(c.insert("relative_attention_num_buckets".into(), 16.into())),
            "`relative_attention_num_buckets` is 16",
        ),
        ("jina-v2-base", &|c| drop(c.remove("feed_forward_type")), "missing `feed_forward_type`"),
        (
            "jina-v2-base",
            &|c| drop(c.insert("feed_forward_type".into(), "swiglu".into())),
            "unsupported feed_forward_type `swiglu`",
        ),
        (
            "deberta-v3-seqcls",
            &|c| drop(c.insert("conv_kernel_size".into(), 3.into())),
            "convolution",
        ),
        (
            "deberta-v3-seqcls",
            &|c| drop(c.insert("pos_att_type".into(), "p2p|c2p".into())),
            "pos_att_type `p2p`",
        ),
        (
            "albert-qa",
            &|c| drop(c.insert("num_hidden_groups".into(), 2.into())),
            "num_hidden_groups",
        ),
        (
            "bert-gelu-tanh-f16",
            &|c| drop(c.insert("position_embedding_type".into(), "relative_key".into())),
            "position_embedding_type `relative_key`",
        ),
        (
            "albert-qa",
            &|c| drop(c.insert("model_type".into(), "llama".into())),
            "supported: bert, distilbert, roberta, camembert, xlm-roberta, electra, albert, mpnet, deberta-v2",
        ),
        (
            "modernbert-seqcls",
            &|c| drop(c.insert("layer_types".into(), serde_json::json!(["full_attention"]))),
            "`layer_types` lists 1 layers of 3",
        ),
        (
            "modernbert-seqcls",
            &|c| drop(c.insert("layer_types".into(), serde_json::json!(["full_attention", "chunked_attention", "full_attention"]))),
            "layer type \"chunked_attention\" is not supported",
        ),
        (
            "modernbert-seqcls",
            &|c| drop(c.insert("rope_parameters".into(), serde_json::json!({"full_attention": {"rope_type": "yarn", "rope_theta": 1e4}}))),
            "rope_type `yarn` is not supported; supported: default, linear, dynamic, ntk (without mixed_b)",
        ),
        (
            "modernbert-seqcls-mean",
            &|c| drop(c.insert("classifier_pooling".into(), "max".into())),
            "classifier_pooling `max` is not supported; supported: cls, mean",
        ),
        (
            "modernbert-mlm",
            &|c| drop(c.insert("hidden_activation".into(), "mish".into())),
            "unsupported hidden_act `mish`",
        ),
        (
            "nomic-bert-hub",
            &|c| drop(c.insert("prenorm".into(), true.into())),
            "nomic_bert with `prenorm: true` is not supported",
        ),
        (
            "nomic-bert-hub",
            &|c| drop(c.remove("n_embd")),
            "missing `hidden_size`",
        ),
        (
            "nomic-bert-hub",
            &|c| drop(c.insert("rotary_emb_scale_base".into(), 512.into())),
            "nomic_bert with `rotary_emb_scale_base: 512` is not supported",
        ),
        (
            "nomic-bert-hub",
            &|c| drop(c.remove("max_trained_positions")),
            "`rotary_scaling_factor` needs a positive `max_trained_positions`",
        ),
        (
            "gte-new-hub",
            &|c| drop(c.insert("rope_scaling".into(), serde_json::json!({"type": "ntk", "factor": 2.0, "mixed_b": 0.6}))),
            "rope_type `ntk` is not supported; supported: default, linear, dynamic, ntk (without mixed_b)",
        ),
        (
            "gte-new-hub",
            &|c| drop(c.insert("logn_attention_scale".into(), true.into())),
            "with `logn_attention_scale: true` is not supported",
        ),
        (
            "eurobert-mlm",
            &|c| drop(c.insert("rope_parameters".into(), serde_json::json!({"rope_type": "llama3", "factor": 8.0, "rope_theta": 5e5}))),
            "rope_type `llama3` is not supported; supported: default, linear, dynamic, ntk (without mixed_b)",
        ),
        (
            "eurobert-seqcls",
            &|c| drop(c.insert("classifier_pooling".into(), "max".into())),
            "classifier_pooling `max` is not supported; supported: bos, mean, late",
        ),
        (
            "eurobert-seqcls-hub",
            &|c| drop(c.insert("clf_pooling".into(), "cls".into())),
            "clf_pooling `cls` is not supported; supported: bos, mean, late",
        ),
        (
            "eurobert-seqcls-mean-gqa",
            &|c| drop(c.insert("num_key_value_heads".into(), 3.into())),
            "num_key_value_heads 3 does not divide 4 heads",
        ),
        (
            "eurobert-tokcls",
            &|c| drop(c.insert("head_dim".into(), 16.into())),
            "head_dim 16 other than hidden_size / num_attention_heads (8) is not supported",
        ),
        (
            "eurobert-mlm",
            &|c| drop(c.remove("intermediate_size")),
            "missing `intermediate_size`",
        ),
    ];
    for (name, edit, want) in cases {
        let got = err(name, edit);
        assert!(got.contains(want), "{name}: `{got}` lacks `{want}`");
    }
}
