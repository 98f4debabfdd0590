//! BERT's pre-training heads on the real splade-tiny encoder: next-sentence prediction (seeded
//! `BertForNextSentencePrediction` and `BertForPreTraining` heads) against PyTorch, and the
//! typed errors of models without the head a task needs. Goldens: scripts/make_mlm_goldens.py.

mod common;
use common::*;
use pollster::block_on;
use webert::tasks::fill_mask::fill_mask;
use webert::tasks::next_sentence::next_sentence;
use webert::Error;

/// IsNext / NotNext probabilities of every golden pair of `kind`, one pair at a time and all
/// of them in one batch.
fn check_nsp(e: &webert::engine::Engine, kind: &str) {
    let g = golden("nsp.json");
    let cases = g["models"][kind]["cases"].as_array().unwrap();
    let pairs: Vec<(&str, &str)> = (cases.iter())
        .map(|c| (str_of(c, "text"), str_of(c, "text_pair")))
        .collect();
    let batched = block_on(next_sentence(e, &pairs, None)).unwrap();
    for (i, c) in cases.iter().enumerate() {
        let enc = e.encode(pairs[i].0, Some(pairs[i].1), None).unwrap();
        assert_eq!(enc.get_ids(), ids(&c["input_ids"]).as_slice());
        assert_eq!(enc.get_type_ids(), ids(&c["token_type_ids"]).as_slice());
        let alone = block_on(next_sentence(e, &pairs[i..i + 1], None))
            .unwrap()
            .remove(0);
        let want = floats(&c["probs"]);
        for got in [&alone, &batched[i]] {
            assert!(got[0].score >= got[1].score, "{kind} {i}: sorted");
            let mut probs = [0.0; 2];
            for ls in got.iter() {
                let at = ["IsNext", "NotNext"].iter().position(|l| *l == ls.label);
                probs[at.expect("label")] = ls.score;
            }
            assert_close(&format!("{kind} pair {i}"), &probs, &want, 1e-4);
        }
    }
}

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
}
