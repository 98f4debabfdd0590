//! Zero-shot classification by NLI: a seeded NLI-shaped head on the real MiniLM encoder
//! (`tests/heads/nli`, `scripts/make_nli_golden.py`) against Hugging Face's
//! `ZeroShotClassificationPipeline`, single- and multi-label, default and custom templates,
//! several texts in one batch; on the CPU and on a GPU adapter (lavapipe in CI).

mod common;
use common::*;
use pollster::block_on;
use webert::engine::Engine;
use webert::model::ModelFiles;
use webert::tasks::zero_shot::{method, zero_shot_many, Method, ZeroShotOptions};

/// The NLI test folder, made once: the tests of this file run in parallel threads and
/// `with_head` replaces the folder each time.
fn nli_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| with_head("nli"))
}

/// Every golden case on `e`, or only those of short texts (`short_only`): the long premise and
/// hypothesis run 512-token pairs, minutes on lavapipe for no other kernel than the short
/// ones' (the CPU test checks them, and tests/gpu.rs long inputs on the GPU).
fn check(e: &Engine, what: &str, short_only: bool) {
    assert_eq!(method(e), Method::Nli);
    let g = golden("nli.json");
    let cases = g["cases"].as_array().unwrap();
    let short = |c: &&serde_json::Value| strs(&c["texts"]).iter().all(|t| t.len() < 1000);
    for case in cases.iter().filter(|c| !short_only || short(c)) {
        let name = str_of(case, "name");
        let texts: Vec<&str> = strs(&case["texts"]);
        let labels: Vec<&str> = strs(&case["candidate_labels"]);
        let template =
            opt_str(case, "hypothesis_template").unwrap_or(str_of(&g, "default_template"));
        for (key, multi) in [("single_label", false), ("multi_label", true)] {
            let opts = ZeroShotOptions {
                hypothesis_template: template.into(),
                multi_label: multi,
                // HF's pipeline cuts the premise (`truncation="only_first"`); webert when asked.
                truncation: Some(usize::MAX),
            };
            let got = block_on(zero_shot_many(e, &texts, &labels, &opts)).unwrap();
            for (i, r) in case["results"].as_array().unwrap().iter().enumerate() {
                let want = &r[key];
                let tag = format!("{what} {name}[{i}] {key}");
                let got_labels: Vec<&str> = got[i].iter().map(|l| l.label.as_str()).collect();
                assert_eq!(got_labels, strs(&want["labels"]), "{tag}");
                let scores: Vec<f32> = got[i].iter().map(|l| l.score).collect();
                assert_close(&tag, &scores, &floats(&want["scores"]), 1e-4);
            }
        }
    }
}

fn strs(v: &serde_json::Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect()
}

#[test]
fn nli_zero_shot_matches_the_hf_pipeline_on_cpu() {
    check(&engine(nli_dir()), "cpu", false);
}

#[test]
fn nli_zero_shot_matches_the_hf_pipeline_on_gpu() {
    let files = ModelFiles::from_dir(nli_dir()).unwrap();
    let options = gpu_f32();
    match block_on(Engine::load(files, options)) {
        Ok(e) => check(&e, "gpu", true),
        Err(err)
            if std::env::var_os("CI").is_some()
                || std::env::var_os("WEBERT_REQUIRE_GPU").is_some() =>
        {
            panic!("a GPU adapter is required here: {err}")
        }
        Err(err) => eprintln!("skipping GPU test: {err}"),
    }
}

#[test]
fn a_classifier_without_an_entailment_label_and_a_bare_encoder_use_similarity() {
    assert_eq!(method(&engine(&with_head("seqcls"))), Method::Similarity);
    assert_eq!(method(&engine(&model_dir("minilm"))), Method::Similarity);
}

#[test]
fn a_hypothesis_that_leaves_the_premise_no_room_is_an_error() {
    // HF's pipeline falls back to no truncation here and the model fails on the over-long pair.
    let e = engine(nli_dir());
    let opts = ZeroShotOptions {
        hypothesis_template: format!("{} {{}}", "word ".repeat(600)),
        multi_label: false,
        truncation: Some(usize::MAX),
    };
    let err = block_on(zero_shot_many(&e, &["a short premise"], &["news"], &opts)).unwrap_err();
    assert!(
        err.to_string().contains("tokens) cannot make it fit"),
        "{err}"
    );
}

#[test]
fn a_premise_longer_than_the_model_takes_needs_truncation_as_every_task() {
    let e = engine(nli_dir());
    let long = "The committee met again on Tuesday. ".repeat(120);
    let refuse = ZeroShotOptions::default();
    let err = block_on(zero_shot_many(
        &e,
        &[&long],
        &["politics", "sport"],
        &refuse,
    ))
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("`truncation: true` in JS, --truncate in the CLI"),
        "{err}"
    );
    let cut = ZeroShotOptions {
        truncation: Some(usize::MAX),
        ..ZeroShotOptions::default()
    };
    let ranked = block_on(zero_shot_many(&e, &[&long], &["politics", "sport"], &cut)).unwrap();
    assert_eq!(ranked[0].len(), 2);
    let sum: f32 = ranked[0].iter().map(|l| l.score).sum();
    assert!((sum - 1.0).abs() < 1e-4, "{sum}");
}
