//! The shipped q4 ONNX PII model (transformers.js layout), imported and dequantized: logits
//! against PyTorch on the same f32 weights and against onnxruntime on the q4 graph, and the
//! token-classification pipeline with every aggregation strategy, long texts windowed.

mod common;
use common::*;
use pollster::block_on;
use serde_json::Value;
use webert::engine::{Engine, Want};
use webert::tasks::entity::Entity;
use webert::tasks::ner::{ner, Aggregation, NerOptions};

fn check_entities(what: &str, got: &[Entity], want: &Value) {
    let want = want.as_array().unwrap();
    let show = |e: &[Entity]| {
        e.iter()
            .map(|x| format!("{}:{}..{}", x.label(), x.start, x.end))
            .collect::<Vec<_>>()
    };
    assert_eq!(got.len(), want.len(), "{what}: {:?} vs {want:?}", show(got));
    for (g, w) in got.iter().zip(want) {
        let label = opt_str(w, "entity").or(opt_str(w, "entity_group")).unwrap();
        assert_eq!(g.label(), label, "{what}");
        assert_eq!(g.word, str_of(w, "word"), "{what}");
        assert_eq!(
            (g.start, g.end),
            (
                w["start"].as_u64().unwrap() as usize,
                w["end"].as_u64().unwrap() as usize
            ),
            "{what}"
        );
        if let Some(i) = w.get("index") {
            assert_eq!(g.index, i.as_u64().map(|x| x as usize), "{what}");
        }
        assert!(
            (g.score - w["score"].as_f64().unwrap() as f32).abs() < 1e-4,
            "{what}: score"
        );
    }
}

fn logits(e: &Engine, ids_: &[u32], text: &str) -> Vec<f32> {
    let enc = e.encode(text, None, None).unwrap();
    assert_eq!(enc.get_ids(), ids_);
    block_on(e.run(&[enc], Want::Logits, &[]))
        .unwrap()
        .remove(0)
        .logits
}

const STRATEGIES: [(&str, Aggregation); 5] = [
    ("none", Aggregation::None),
    ("simple", Aggregation::Simple),
    ("first", Aggregation::First),
    ("average", Aggregation::Average),
    ("max", Aggregation::Max),
];

#[test]
fn logits_match_pytorch_and_onnxruntime() {
    let g = golden("pii.json");
    let e = engine(&model_dir("pii"));
    for case in g["cases"].as_array().unwrap() {
        let name = str_of(case, "name");
        let got = logits(&e, &ids(&case["input_ids"]), str_of(case, "text"));
        assert_close(
            &format!("{name} vs torch"),
            &got,
            &floats(&case["torch_logits"]),
            1e-4,
        );
        assert_close(
            &format!("{name} vs ORT q4"),
            &got,
            &floats(&case["ort_logits"]),
            1e-3,
        );
    }
}

#[test]
fn every_aggregation_matches_pipeline() {
    let g = golden("pii.json");
    let e = engine(&model_dir("pii"));
    for case in g["cases"].as_array().unwrap() {
        for (key, agg) in STRATEGIES {
            let opts = NerOptions {
                aggregation: agg,
                ..Default::default()
            };
            let got = block_on(ner(&e, str_of(case, "text"), &opts)).unwrap();
            check_entities(
                &format!("{} / {key}", str_of(case, "name")),
                &got,
                &case["pipeline"][key],
            );
        }
    }
}

#[test]
fn long_text_is_windowed_and_merged() {
    let g = &golden("pii.json")["long"];
    let e = engine(&model_dir("pii"));
    let text = str_of(g, "text");
    let max_len = g["model_max_length"].as_u64().unwrap() as usize;
    let stride = g["stride"].as_u64().unwrap() as usize;
    let windows = e
        .tokenizer
        .encode_windows(
            text,
            None,
            webert::model::Windowing {
                max_len,
                stride,
                only_second: false,
            },
        )
        .unwrap();
    let want_windows = g["windows"].as_array().unwrap();
    assert_eq!(windows.len(), want_windows.len());
    let outs = block_on(e.run(&windows, Want::Logits, &[])).unwrap();
    for ((enc, out), w) in windows.iter().zip(&outs).zip(want_windows) {
        assert_eq!(enc.get_ids(), ids(&w["input_ids"]).as_slice());
        assert_close(
            "window vs torch",
            &out.logits,
            &floats(&w["torch_logits"]),
            1e-4,
        );
        assert_close(
            "window vs ORT",
            &out.logits,
            &floats(&w["ort_logits"]),
            1e-3,
        );
    }
    for (key, agg) in &STRATEGIES[1..] {
        let opts = NerOptions {
            aggregation: *agg,
            stride,
            max_len: Some(max_len),
            ..Default::default()
        };
        let got = block_on(ner(&e, text, &opts)).unwrap();
        check_entities(&format!("long / {key}"), &got, &g["pipeline"][key]);
    }
}
