//! BERT's pre-training heads on the real splade-tiny encoder: next-sentence prediction (seeded
//! `BertForNextSentencePrediction` and `BertForPreTraining` heads) and masked-LM
//! pseudo-log-likelihoods against PyTorch, and the typed errors of models without the head a
//! task needs. Goldens: scripts/make_mlm_goldens.py.

mod common;
use common::pretraining::{check_nsp, check_pll};
use common::*;
use pollster::block_on;
use webert::tasks::fill_mask::fill_mask;
use webert::tasks::next_sentence::next_sentence;
use webert::tasks::scoring::{score, ScoreOptions};
use webert::Error;

#[test]
fn next_sentence_prediction_matches_pytorch() {
    check_nsp(&engine(&with_head_on("splade-tiny", "nsp")), "nsp");
}

#[test]
fn pretraining_model_runs_both_heads() {
    let e = engine(&with_head_on("splade-tiny", "pretraining"));
    check_nsp(&e, "pretraining");
    // The masked-LM head is splade-tiny's own, decoder tied to the word embeddings: fill-mask
    // gives the same answers as on the BertForMaskedLM checkpoint.
    let mlm = engine(&model_dir("splade-tiny"));
    let text = "The capital of France is [MASK].";
    let a = block_on(fill_mask(&e, text, 5, None)).unwrap();
    let b = block_on(fill_mask(&mlm, text, 5, None)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn pseudo_log_likelihood_matches_pytorch() {
    check_pll(&engine(&model_dir("splade-tiny")));
}

#[test]
fn pseudo_log_likelihood_on_the_pretraining_model() {
    check_pll(&engine(&with_head_on("splade-tiny", "pretraining")));
}

#[test]
fn scoring_texts_together_or_alone_agrees() {
    let e = engine(&model_dir("splade-tiny"));
    let texts = ["He walked to school.", "", "Walked he school to."];
    let opts = ScoreOptions { max_len: Some(6) };
    let together = block_on(score(&e, &texts, opts)).unwrap();
    for (t, r) in texts.iter().zip(&together) {
        let alone = block_on(score(&e, &[t], opts)).unwrap().remove(0);
        assert_eq!(&alone, r);
    }
    assert!(together[1].tokens.is_empty() && together[1].pseudo_log_likelihood == 0.0);
    // A window with no room for the text after [CLS] and [SEP] is an error, not a panic.
    let err = block_on(score(&e, &texts, ScoreOptions { max_len: Some(2) })).unwrap_err();
    assert!(err.to_string().contains("no room"), "{err}");
}

#[test]
fn tasks_on_models_without_their_head_name_the_architecture() {
    let mlm = engine(&model_dir("splade-tiny"));
    let err = block_on(next_sentence(&mlm, &[("a", "b")], None)).unwrap_err();
    assert!(matches!(err, Error::WrongHead(..)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("next-sentence") && msg.contains("BertForMaskedLM"),
        "{msg}"
    );
    let nsp = engine(&with_head_on("splade-tiny", "nsp"));
    let err = block_on(fill_mask(&nsp, "a [MASK].", 5, None)).unwrap_err();
    assert!(
        err.to_string().contains("BertForNextSentencePrediction"),
        "{err}"
    );
    let err = block_on(score(&nsp, &["a text"], ScoreOptions::default())).unwrap_err();
    assert!(matches!(err, Error::WrongHead(..)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("masked-LM") && msg.contains("BertForNextSentencePrediction"),
        "{msg}"
    );
}

#[test]
fn only_bert_has_next_sentence_and_pre_training_heads() {
    use webert::model::{Architecture, ModelConfig};
    let config = std::fs::read_to_string(model_dir("splade-tiny").join("config.json")).unwrap();
    let with = |arch: &str, model_type: &str| {
        let mut v: serde_json::Value = serde_json::from_str(&config).unwrap();
        v["architectures"] = serde_json::json!([arch]);
        v["model_type"] = serde_json::json!(model_type);
        ModelConfig::from_json("config.json", &v.to_string())
    };
    let c = with("BertForPreTraining", "bert").unwrap();
    assert_eq!(c.architecture, Architecture::PreTraining);
    assert_eq!(c.architecture_name(), "BertForPreTraining");
    // ELECTRA's *ForPreTraining is a discriminator, not BERT's two heads.
    let err = with("ElectraForPreTraining", "electra").unwrap_err();
    assert!(matches!(err, Error::UnsupportedArchitecture(_)), "{err:?}");
    assert!(err.to_string().contains("ElectraForPreTraining"), "{err}");
}

/// Benchmark (prints figures, asserts none): PLL of a 61-token text on splade-tiny, the masked
/// copies batched with one picked row each (what `score` does), against one forward per
/// copy, and against batches that decode every row. `cargo test --release --test pretraining
/// -- --ignored --nocapture pll_batching`.
#[test]
#[ignore]
fn pll_batching_speed() {
    use std::time::Instant;
    use tokenizers::Encoding;
    use webert::engine::Want;
    let e = engine(&model_dir("splade-tiny"));
    let g = golden("pll.json");
    let text = str_of(&g["cases"][9], "text");
    let enc = e.encode(text, None, None).unwrap();
    let n = enc.len();
    let mask = e.tokenizer.mask_id.unwrap();
    let copies: Vec<Encoding> = (1..n - 1)
        .map(|i| {
            let mut ids = enc.get_ids().to_vec();
            ids[i] = mask;
            let z = vec![0; n];
            let one = vec![1; n];
            let (v, o) = (Vec::new(), Vec::new());
            Encoding::new(
                ids,
                z,
                v,
                Vec::new(),
                o,
                Vec::new(),
                one,
                Vec::new(),
                Default::default(),
            )
        })
        .collect();
    let picked: Vec<Vec<usize>> = (1..n - 1).map(|i| vec![i]).collect();
    let every: Vec<Vec<usize>> = (1..n - 1).map(|_| (0..n).collect()).collect();
    let best = |f: &dyn Fn()| {
        f();
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::INFINITY, f64::min)
    };
    let batched = best(&|| {
        block_on(score(&e, &[text], ScoreOptions::default())).unwrap();
    });
    let one_by_one = best(&|| {
        for (c, p) in copies.iter().zip(&picked) {
            block_on(e.run(
                std::slice::from_ref(c),
                Want::Logits,
                std::slice::from_ref(p),
            ))
            .unwrap();
        }
    });
    let all_rows = best(&|| {
        block_on(e.run(&copies, Want::Logits, &every)).unwrap();
    });
    eprintln!(
        "PLL of {} tokens ({}): batched, one row each {batched:.1} ms; one forward per copy \
         {one_by_one:.1} ms ({:.2}x); batched, every row decoded {all_rows:.1} ms ({:.2}x)",
        n - 2,
        e.backend(),
        one_by_one / batched,
        all_rows / batched
    );
}
