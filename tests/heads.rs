//! Seeded classification and QA heads on the real MiniLM encoder, against HF transformers'
//! logits and the `text-classification` / `question-answering` pipelines.

mod common;
use common::*;
use pollster::block_on;
use webert::engine::Want;
use webert::tasks::classify::{classify, ClassifyOptions, ScoreFn};
use webert::tasks::qa::{answer, QaOptions};

#[test]
fn sequence_classification_matches_pipeline() {
    let g = golden("seqcls.json");
    let e = engine(&with_head("seqcls"));
    for case in g["cases"].as_array().unwrap() {
        let input = (str_of(case, "text"), opt_str(case, "text_pair"));
        let enc = e.encode(input.0, input.1, None).unwrap();
        assert_eq!(enc.get_ids(), ids(&case["input_ids"]).as_slice());
        let raw = block_on(classify(
            &e,
            &[input],
            ClassifyOptions {
                function: ScoreFn::None,
                ..Default::default()
            },
        ))
        .unwrap();
        let mut logits = vec![0.0; raw[0].len()];
        for ls in &raw[0] {
            let i = ["negative", "neutral", "positive"]
                .iter()
                .position(|l| *l == ls.label)
                .unwrap();
            logits[i] = ls.score;
        }
        assert_close("logits", &logits, &floats(&case["logits"]), 1e-4);
        for (key, f) in [("softmax", ScoreFn::Auto), ("sigmoid", ScoreFn::Sigmoid)] {
            let got = block_on(classify(
                &e,
                &[input],
                ClassifyOptions {
                    function: f,
                    ..Default::default()
                },
            ))
            .unwrap()
            .remove(0);
            let want = case["pipeline"][key].as_array().unwrap();
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(want) {
                assert_eq!(g.label, str_of(w, "label"), "{key} order for {:?}", input.0);
                assert!(
                    (g.score - w["score"].as_f64().unwrap() as f32).abs() < 1e-4,
                    "{key} score"
                );
            }
        }
    }
}

#[test]
fn question_answering_matches_pipeline() {
    let g = golden("qa.json");
    let e = engine(&with_head("qa"));
    for case in g["cases"].as_array().unwrap() {
        let name = str_of(case, "name");
        let p = &case["params"];
        let opts = QaOptions {
            top_k: p["top_k"].as_u64().unwrap() as usize,
            max_seq_len: p["max_seq_len"].as_u64().map(|x| x as usize),
            doc_stride: p["doc_stride"].as_u64().map(|x| x as usize),
            max_question_len: p["max_question_len"].as_u64().unwrap() as usize,
            max_answer_len: p["max_answer_len"].as_u64().unwrap() as usize,
            handle_impossible_answer: p["handle_impossible_answer"].as_bool().unwrap(),
            align_to_words: p["align_to_words"].as_bool().unwrap(),
        };
        let got = block_on(answer(
            &e,
            str_of(case, "question"),
            str_of(case, "context"),
            &opts,
        ))
        .unwrap();
        let want = case["answers"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{name}: {got:?}");
        for (a, w) in got.iter().zip(want) {
            assert_eq!(a.answer, str_of(w, "answer"), "{name}");
            assert_eq!(
                (a.start, a.end),
                (
                    w["start"].as_u64().unwrap() as usize,
                    w["end"].as_u64().unwrap() as usize
                ),
                "{name}"
            );
            let ws = w["score"].as_f64().unwrap() as f32;
            assert!(
                (a.score - ws).abs() <= 1e-4 * ws.max(1e-3),
                "{name}: score {} vs {ws}",
                a.score
            );
        }
        if let Some(raw) = case.get("raw") {
            let enc = e
                .encode(
                    str_of(case, "question"),
                    Some(str_of(case, "context")),
                    None,
                )
                .unwrap();
            assert_eq!(enc.get_ids(), ids(&raw["input_ids"]).as_slice());
            let out = block_on(e.run(&[enc], Want::Logits, &[]))
                .unwrap()
                .remove(0);
            let start: Vec<f32> = out.logits.iter().step_by(2).copied().collect();
            let end: Vec<f32> = out.logits.iter().skip(1).step_by(2).copied().collect();
            assert_close("start logits", &start, &floats(&raw["start_logits"]), 1e-4);
            assert_close("end logits", &end, &floats(&raw["end_logits"]), 1e-4);
        }
    }
}
