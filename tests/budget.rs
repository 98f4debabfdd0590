//! Memory budgets: a model that declares more than the budget is refused before its weights are
//! read, sizes are overflow-checked, and a call whose batch would exceed the budget fails alone.

use pollster::block_on;
use std::path::{Path, PathBuf};
use webert::engine::{Engine, LoadOptions};
use webert::model::{ModelConfig, ModelFiles, Weights};
use webert::tasks::ner::{ner, NerOptions};
use webert::Error;

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tiny/bert-gelu-tanh-f16")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(tiny().join(name)).unwrap()
}

/// The tiny model's files with `config.json` edited by `edit` and its weights replaced.
fn files(edit: impl Fn(&mut serde_json::Value), weights: Vec<u8>) -> ModelFiles {
    let mut cfg: serde_json::Value = serde_json::from_slice(&read("config.json")).unwrap();
    edit(&mut cfg);
    let mut f = ModelFiles::new("tiny");
    f.add("config.json", cfg.to_string().into_bytes());
    f.add("tokenizer.json", read("tokenizer.json"));
    f.add("model.safetensors", weights);
    f
}

fn load(files: ModelFiles, budget: Option<u64>) -> webert::Result<Engine> {
    let options = LoadOptions {
        memory_budget: budget,
        threads: Some(1),
        ..LoadOptions::cpu()
    };
    block_on(Engine::load(files, options))
}

#[test]
fn a_config_that_declares_gigabytes_is_refused_before_the_weights_are_read() {
    // 10^9 words of 32 values: 128 GB of f32, over the 8 GiB native default. The weights
    // are garbage: the refusal comes first.
    let f = files(
        |c| c["vocab_size"] = 1_000_000_000u64.into(),
        b"garbage".to_vec(),
    );
    let e = load(f, None).err().expect("refused");
    assert!(matches!(e, Error::Budget { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("vocab_size 1000000000") && msg.contains("122.9 GiB"),
        "{msg}"
    );
    assert!(msg.contains("memory budget of 8.0 GiB"), "{msg}");
    // Within a budget that holds it, the weights are read and found wanting.
    let f = files(
        |c| c["vocab_size"] = 1_000_000_000u64.into(),
        b"garbage".to_vec(),
    );
    let e = load(f, Some(200 << 30)).err().expect("refused");
    assert!(matches!(e, Error::Safetensors { .. }), "{e}");
}

#[test]
fn sizes_past_64_bits_are_a_config_error() {
    for key in [
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
    ] {
        let mut cfg: serde_json::Value = serde_json::from_slice(&read("config.json")).unwrap();
        cfg[key] = (u64::MAX / 2).into();
        if key == "hidden_size" {
            cfg["num_attention_heads"] = 1.into();
        }
        let e = ModelConfig::from_json("config.json", &cfg.to_string()).unwrap_err();
        assert!(e.to_string().contains("past 2^64 bytes"), "{key}: {e}");
    }
    let cfg = ModelConfig::from_json("c", &String::from_utf8(read("config.json")).unwrap());
    let bytes = cfg.unwrap().weight_bytes().unwrap();
    // The tiny model's safetensors holds f16 weights: about half its f32 size, plus a header.
    let file = read("model.safetensors").len() as u64;
    assert!(
        bytes > 2 * (file - 8192) && bytes < 3 * file,
        "{bytes} vs {file}"
    );
}

#[test]
fn safetensors_shapes_are_checked_before_conversion() {
    let bytes = read("model.safetensors");
    let mut w = Weights::default();
    let e = w.add_safetensors_within("m", &bytes, 4096).unwrap_err();
    assert!(matches!(e, Error::Budget { .. }), "{e}");
    assert!(w.is_empty(), "nothing converted");
    w.add_safetensors_within("m", &bytes, 1 << 20).unwrap();
    // A second shard counts what the first holds.
    let held = w.bytes();
    let e = w
        .add_safetensors_within("m2", &bytes, held + 100)
        .unwrap_err();
    assert!(matches!(e, Error::Budget { .. }), "{e}");
    // A header whose shape needs more bytes than its offsets give, or offsets past the file's
    // end: refused before any data is read.
    for header in [
        r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}"#,
        r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4000000000]}}"#,
        r#"{"a":{"dtype":"F32","shape":[18446744073709551615,2],"data_offsets":[0,8]}}"#,
    ] {
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(header.as_bytes());
        file.extend_from_slice(&[0; 8]);
        let e = Weights::default().add_safetensors("x", &file).unwrap_err();
        assert!(matches!(e, Error::Safetensors { .. }), "{header}: {e}");
    }
}

#[test]
fn a_tiny_budget_refuses_the_model_and_names_it() {
    let f = ModelFiles::from_dir(&tiny()).unwrap();
    let e = load(f, Some(10_000)).err().expect("refused");
    assert!(matches!(e, Error::Budget { .. }), "{e}");
    assert!(e.to_string().contains("BertForTokenClassification"), "{e}");
}

#[test]
fn a_batch_past_the_budget_fails_that_call_and_the_engine_lives_on() {
    let text = String::from_utf8(read("config.json")).unwrap();
    let weights = ModelConfig::from_json("c", &text)
        .unwrap()
        .weight_bytes()
        .unwrap();
    // Room for a few hundred tokens of activations beside the weights, not for 32 windows.
    let engine = load(
        ModelFiles::from_dir(&tiny()).unwrap(),
        Some(weights + 400_000),
    )
    .unwrap();
    let long = "Alice Smith flew from Paris to Berlin with Bob Jones. ".repeat(200);
    let e = block_on(ner(&engine, &long, &NerOptions::default())).unwrap_err();
    assert!(matches!(e, Error::Budget { .. }), "{e}");
    assert!(
        e.to_string().contains("the activations of a batch of 32"),
        "{e}"
    );
    let short = block_on(ner(
        &engine,
        "Alice Smith flew to Paris.",
        &NerOptions::default(),
    ));
    assert!(short.is_ok(), "{short:?}");
    // The same long text on an engine with the default budget.
    let roomy = load(ModelFiles::from_dir(&tiny()).unwrap(), None).unwrap();
    assert!(block_on(ner(&roomy, &long, &NerOptions::default())).is_ok());
}
