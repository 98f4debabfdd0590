//! all-MiniLM-L6-v2 against HF transformers (PyTorch f32): tokens, hidden states, pooling,
//! padded batches, similarity ranking and zero-shot by embedding similarity.

mod common;
use common::*;
use pollster::block_on;
use webert::tasks::embed::{self, EmbedOptions, Pooling};
use webert::tasks::zero_shot::{zero_shot, ZeroShotOptions};

#[test]
fn hidden_states_and_pooling_match_pytorch() {
    let g = golden("minilm.json");
    let e = engine(&model_dir("minilm"));
    for case in g["cases"].as_array().unwrap() {
        let name = str_of(case, "name");
        let (text, pair) = (str_of(case, "text"), opt_str(case, "text_pair"));
        let truncate = case["truncation_max_length"].as_u64().map(|n| n as usize);
        let enc = e.encode(text, pair, truncate).unwrap();
        assert_eq!(
            enc.get_ids(),
            ids(&case["input_ids"]).as_slice(),
            "{name}: input ids"
        );
        assert_eq!(
            enc.get_type_ids(),
            ids(&case["token_type_ids"]).as_slice(),
            "{name}: type ids"
        );
        let states = block_on(embed::hidden_states(&e, &[(text, pair)], truncate))
            .unwrap()
            .remove(0);
        let flat: Vec<f32> = states.concat();
        if let Some(h) = case.get("last_hidden_state") {
            assert_close(
                &format!("{name}: last_hidden_state"),
                &flat,
                &floats(h),
                1e-4,
            );
        }
        let pooled = &case["pooled"];
        for (key, pooling, norm) in [
            ("mean", Pooling::Mean, false),
            ("mean_l2", Pooling::Mean, true),
            ("cls", Pooling::Cls, false),
            ("max", Pooling::Max, false),
        ] {
            let mut v = embed::pool(&states, pooling);
            if norm {
                embed::l2_normalize(&mut v);
            }
            assert_close(
                &format!("{name}: {key} pooling"),
                &v,
                &floats(&pooled[key]),
                1e-4,
            );
        }
    }
}

#[test]
fn padded_batch_equals_single_runs() {
    let g = golden("minilm.json");
    let e = engine(&model_dir("minilm"));
    let texts: Vec<&str> = g["batch"]["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let opts = EmbedOptions {
        pooling: Pooling::Mean,
        normalize: true,
        truncation: None,
    };
    let got = block_on(embed::embed(&e, &texts, opts)).unwrap();
    for (i, v) in got.iter().enumerate() {
        assert_close(
            &format!("batch item {i}"),
            v,
            &floats(&g["batch"]["pooled"]["mean_l2"][i]),
            1e-4,
        );
    }
}

#[test]
fn similarity_ranking_matches() {
    let g = &golden("minilm.json")["similarity"];
    let e = engine(&model_dir("minilm"));
    let docs: Vec<&str> = g["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let opts = EmbedOptions {
        pooling: Pooling::Mean,
        normalize: true,
        truncation: None,
    };
    let ranked = block_on(embed::rank(&e, str_of(g, "query"), &docs, opts)).unwrap();
    let order: Vec<usize> = ranked.iter().map(|r| r.0).collect();
    let want: Vec<usize> = g["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(order, want);
    let cos = floats(&g["cosine"]);
    for (i, s) in ranked {
        assert!(
            (s - cos[i]).abs() < 1e-4,
            "cosine of {i}: {s} vs {}",
            cos[i]
        );
    }
}

#[test]
fn zero_shot_matches_reference_formula() {
    let g = &golden("minilm.json")["zero_shot"];
    let e = engine(&model_dir("minilm"));
    for case in g["cases"].as_array().unwrap() {
        let labels: Vec<&str> = case["candidate_labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        for (key, multi) in [("single_label", false), ("multi_label", true)] {
            let opts = ZeroShotOptions {
                hypothesis_template: str_of(g, "hypothesis_template").into(),
                multi_label: multi,
                truncation: None,
            };
            let got = block_on(zero_shot(&e, str_of(case, "sequence"), &labels, &opts)).unwrap();
            let want_labels: Vec<&str> = case[key]["labels"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            assert_eq!(
                got.iter().map(|l| l.label.as_str()).collect::<Vec<_>>(),
                want_labels,
                "{key}"
            );
            let scores: Vec<f32> = got.iter().map(|l| l.score).collect();
            assert_close(key, &scores, &floats(&case[key]["scores"]), 1e-4);
        }
    }
}

#[test]
fn zero_shot_by_similarity_refuses_a_long_text_unless_asked_to_cut() {
    let e = engine(&model_dir("minilm"));
    let long = "A quiet morning by the lake. ".repeat(150);
    let err = block_on(zero_shot(
        &e,
        &long,
        &["nature", "finance"],
        &ZeroShotOptions::default(),
    ))
    .unwrap_err();
    assert!(
        err.to_string().contains("`truncation: true` in JS"),
        "{err}"
    );
    let cut = ZeroShotOptions {
        truncation: Some(usize::MAX),
        ..ZeroShotOptions::default()
    };
    assert_eq!(
        block_on(zero_shot(&e, &long, &["nature", "finance"], &cut))
            .unwrap()
            .len(),
        2
    );
}

/// The roofline of CPU forwards: its fractions are its own figures' ratios, its floor the
/// longer of streaming the weights at the measured bandwidth and the encoder's multiply-adds
/// at the measured peak.
#[test]
fn the_roofline_is_the_longer_of_its_two_bounds() {
    let e = engine(&model_dir("minilm"));
    let window = e
        .tokenizer
        .encode("how near the limits does it run", None)
        .unwrap();
    let r = block_on(e.time_cpu_roofline(&window, 3, 16 << 20))
        .unwrap()
        .expect("a CPU engine");
    assert_eq!(r.tokens, window.len());
    assert_eq!(r.weight_bytes, e.cpu_weight_bytes());
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    assert!(close(
        r.weight_gb_per_s,
        r.weight_bytes as f64 / (r.forward_ms * 1e6)
    ));
    assert!(close(
        r.of_read_bandwidth,
        r.weight_gb_per_s / r.read_gb_per_s
    ));
    let peak = r.peak_gmac_per_s.expect("an f32 tile's peak");
    let stream_ms = r.weight_bytes as f64 / (r.read_gb_per_s * 1e6);
    let compute_ms = e.encoder_flops(1, r.tokens) / 2.0 / (peak * 1e6);
    let floor = r.floor_ms.unwrap();
    assert!(close(floor, stream_ms.max(compute_ms)), "{r:?}");
    assert!(close(r.of_floor.unwrap(), floor / r.forward_ms));
}
