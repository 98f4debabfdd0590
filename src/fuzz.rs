//! Entry points of the fuzz targets (`tests/fuzz`, nightly `cargo fuzz`) and of the stable
//! replay of their corpus (`tests/fuzz_corpus.rs`): each feeds outside bytes to one parser the
//! way a model folder or a page would, and must return, never panic. Not part of the API.

use crate::engine::{Engine, LoadOptions};
use crate::model::{ModelConfig, ModelFiles, ModelType, Plan, TextTokenizer, Weights, Windowing};
use crate::tasks::head::ClassifierHead;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The fuzz targets, by name (as in `tests/fuzz/fuzz_targets/`).
pub const TARGETS: &[&str] = &[
    "safetensors",
    "config",
    "tokenizer",
    "onnx",
    "web_call",
    "head",
];

/// Memory budget of every target: large enough for the seeds, small enough that an input which
/// declares gigabytes is refused rather than allocated.
pub const BUDGET: u64 = 256 << 20;

/// The config the safetensors target builds a plan with (tests/tiny/bert-gelu-tanh-f16).
const TINY_CONFIG: &str = r#"{"architectures": ["BertForTokenClassification"], "hidden_act": "gelu_new",
 "hidden_size": 32, "id2label": {"0": "O", "1": "B-PER", "2": "I-PER", "3": "B-LOC", "4": "I-LOC"},
 "intermediate_size": 64, "layer_norm_eps": 1e-12, "max_position_embeddings": 64,
 "model_type": "bert", "num_attention_heads": 4, "num_hidden_layers": 2, "pad_token_id": 0,
 "type_vocab_size": 2, "vocab_size": 490}"#;

/// Runs target `name` on `data`; `false` for an unknown name.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "safetensors" => safetensors(data),
        "config" => config(data),
        "tokenizer" => tokenizer(data),
        "onnx" => onnx(data),
        "web_call" => web_call(data),
        "head" => head(data),
        _ => return false,
    }
    true
}

/// A safetensors file (header and data) as a shard of a model folder, then the plan built from
/// it for a tiny BERT config.
pub fn safetensors(data: &[u8]) {
    let mut w = Weights::default();
    if w.add_safetensors_within("fuzz.safetensors", data, BUDGET)
        .is_err()
    {
        return;
    }
    if let Ok(cfg) = ModelConfig::from_json("config.json", TINY_CONFIG) {
        let _ = Plan::build(cfg, w);
    }
}

/// A `config.json`, and the weight budget it implies.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cfg) = ModelConfig::from_json("config.json", text) {
        let _ = cfg.check_budget(BUDGET);
        let _ = (cfg.max_sequence_len(), cfg.head_dim(), cfg.labels(3));
        let _ = cfg.architecture_name();
    }
}

/// A `tokenizer.json` through [`TextTokenizer`], then encoding, windowing and decoding a few
/// texts with it.
pub fn tokenizer(data: &[u8]) {
    let Ok(tok) = TextTokenizer::from_json(data, None) else {
        return;
    };
    let texts = [
        "Hello, World! Zoë at 9:30 😀 [MASK] <mask>",
        "",
        "a\u{0}b\u{202e}c",
    ];
    for text in texts {
        if let Ok(enc) = tok.encode(text, Some("second text")) {
            let _ = tok.decode(enc.get_ids(), true);
            let tokens: Vec<String> = enc.get_tokens().to_vec();
            let _ = tok.tokens_to_string(&tokens);
        }
        let w = Windowing {
            max_len: 12,
            stride: 2,
            only_second: false,
        };
        let _ = tok.encode_windows(text, None, w);
    }
    for id in [0, 1, 100, u32::MAX] {
        let _ = tok.id_to_token(id);
    }
}

/// An ONNX model through the importer (protobuf decoding, graph following, dequantization),
/// with the module names of the family the first byte picks.
pub fn onnx(data: &[u8]) {
    let families = [
        ModelType::Bert,
        ModelType::DistilBert,
        ModelType::Roberta,
        ModelType::Electra,
    ];
    let family = families[data.first().map_or(0, |b| *b as usize % families.len())];
    let _ = crate::model::onnx::import_within("fuzz.onnx", data, family, BUDGET);
}

/// A saved classifier head (`tasks::head`), scored once when it reads.
pub fn head(data: &[u8]) {
    if let Ok(h) = ClassifierHead::from_safetensors(data) {
        let x = vec![0.5; h.hidden_size()];
        let _ = h.scores(&x, Default::default(), Some(2));
    }
}

/// The tasks of the JSON request surface and the tiny model (tests/tiny) that answers each.
const CALLS: &[(&str, &str)] = &[
    ("text-classification", "distilbert-seqcls"),
    ("token-classification", "roberta-tokcls"),
    ("question-answering", "electra-qa"),
    ("feature-extraction", "bert-gelu-tanh-f16"),
    ("rank", "bert-gelu-tanh-f16"),
    ("fill-mask", "xlmr-mlm"),
    ("next-sentence-prediction", "distilbert-mlm"),
    ("text-scoring", "distilbert-mlm"),
    ("zero-shot-classification", "distilbert-seqcls"),
];

fn tiny_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/tiny")
        .join(name)
}

thread_local! {
    static ENGINES: std::cell::RefCell<HashMap<&'static str, std::rc::Rc<Engine>>> =
        Default::default();
}

fn tiny_engine(name: &'static str) -> Option<std::rc::Rc<Engine>> {
    if let Some(e) = ENGINES.with(|m| m.borrow().get(name).cloned()) {
        return Some(e);
    }
    let files = ModelFiles::from_dir(&tiny_dir(name)).ok()?;
    let options = LoadOptions {
        threads: Some(1),
        ..LoadOptions::cpu()
    };
    let engine = std::rc::Rc::new(pollster::block_on(Engine::load(files, options)).ok()?);
    ENGINES.with(|m| m.borrow_mut().insert(name, engine.clone()));
    Some(engine)
}

/// One request of `web/calls.rs`: the first byte picks the task (or, past the tasks, the
/// model-free `redact`), the rest is the request's JSON (for `redact`: text, entities and
/// options on three lines). The engines are the tiny models of `tests/tiny`, loaded once.
pub fn web_call(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(json) = std::str::from_utf8(rest) else {
        return;
    };
    let pick = pick as usize % (CALLS.len() + 1);
    let Some(&(task, model)) = CALLS.get(pick) else {
        let mut parts = json.splitn(3, '\n');
        let (text, entities) = (parts.next().unwrap_or(""), parts.next().unwrap_or("[]"));
        let _ = crate::web::calls::redact(text, entities, parts.next().unwrap_or("{}"));
        return;
    };
    let Some(engine) = tiny_engine(model) else {
        return;
    };
    let _ = pollster::block_on(crate::web::calls::call(&engine, task, json));
}

/// The task a `web_call` input's first byte picks (the seed generator writes inputs by name).
pub fn web_call_byte(task: &str) -> Option<u8> {
    if task == "redact" {
        return Some(CALLS.len() as u8);
    }
    CALLS.iter().position(|(t, _)| *t == task).map(|i| i as u8)
}
