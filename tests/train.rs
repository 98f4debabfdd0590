//! Teaching a classifier against scikit-learn's LogisticRegression (tests/golden/train.json,
//! scripts/make_train_golden.py): the solver on sklearn's own features, and the whole path
//! (webert's MiniLM features, training, the head file, classification) on the same texts.

mod common;
use common::*;
use pollster::block_on;
use serde_json::Value;
use webert::tasks::classify::{ClassifyOptions, ScoreFn};
use webert::tasks::head::{ClassifierHead, EncoderId};
use webert::tasks::train::{self, Example, TrainOptions};

fn features(name: &str) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(root().join("tests/golden/train_features.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let t = st.tensor(name).unwrap();
    let d = t.shape()[1];
    let v: Vec<f32> = (t.data().chunks_exact(4))
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    v.chunks(d).map(<[f32]>::to_vec).collect()
}

fn examples(g: &Value, set: &str) -> Vec<Example> {
    serde_json::from_value(g["sets"][set]["examples"].clone()).unwrap()
}

fn held_out(g: &Value, set: &str) -> Vec<String> {
    serde_json::from_value(g["sets"][set]["held_out"].clone()).unwrap()
}

/// Per held-out text, the probabilities in the order of `classes`.
fn probabilities(head: &ClassifierHead, x: &[Vec<f32>], classes: &[String]) -> Vec<Vec<f32>> {
    x.iter()
        .map(|v| {
            let s = head.scores(v, ScoreFn::Auto, None);
            let by = |c: &String| s.iter().find(|l| &l.label == c).unwrap().score;
            classes.iter().map(by).collect()
        })
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    serde_json::from_value(v.clone()).unwrap()
}

fn minilm_id() -> EncoderId {
    EncoderId {
        model_type: "bert".into(),
        hidden_size: 384,
        config_hash: "test".into(),
    }
}

#[test]
fn the_solver_finds_sklearns_coefficients_on_its_features() {
    let g = golden("train.json");
    for case in g["cases"].as_array().unwrap() {
        let set = case["set"].as_str().unwrap();
        let c = case["C"].as_f64().unwrap();
        let what = format!("{set} C={c}");
        let x = features(&format!("{set}.train"));
        let labels: Vec<String> = examples(&g, set).into_iter().map(|e| e.label).collect();
        let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
        let head = train::fit_head(&x, &refs, c, minilm_id()).unwrap();
        let classes = strings(&case["classes"]);
        assert_eq!(head.labels, classes, "{what}: labels");
        assert!(head.converged, "{what}: not converged");
        // sklearn stops at its lbfgs tolerance, webert much further: both at the optimum to
        // about 1e-7 (the generator checks sklearn's lbfgs against its newton-cg).
        assert_close(
            &format!("{what}: coef"),
            &head.weight,
            &floats(&case["coef"]),
            2e-5,
        );
        assert_close(
            &format!("{what}: intercept"),
            &head.bias,
            &floats(&case["intercept"]),
            2e-5,
        );
        let xh = features(&format!("{set}.held_out"));
        let got: Vec<f32> = probabilities(&head, &xh, &classes).concat();
        let want: Vec<f32> = (case["held_out_proba"].as_array().unwrap().iter())
            .flat_map(floats)
            .collect();
        eprintln!(
            "{what}: sklearn's features, probabilities within {:e}",
            max_abs_diff(&got, &want)
        );
        assert_close(&format!("{what}: probabilities"), &got, &want, 1e-6);
    }
}

#[test]
fn training_on_webert_features_matches_sklearn_on_held_out_texts() {
    let g = golden("train.json");
    let e = engine(&model_dir("minilm"));
    for case in g["cases"].as_array().unwrap() {
        let set = case["set"].as_str().unwrap();
        let c = case["C"].as_f64().unwrap();
        let what = format!("{set} C={c}");
        let opts = TrainOptions {
            c,
            ..Default::default()
        };
        let head = block_on(train::train(&e, &examples(&g, set), opts)).unwrap();
        // Through the file format, as a user's saved head would be.
        let head = ClassifierHead::from_safetensors(&head.to_safetensors().unwrap()).unwrap();
        let texts = held_out(&g, set);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let opts = ClassifyOptions::default();
        let got = block_on(train::classify(&e, &head, &refs, opts)).unwrap();
        let classes = strings(&case["classes"]);
        let want_labels = strings(&case["held_out_labels"]);
        let mut worst = 0f32;
        for (i, ranked) in got.iter().enumerate() {
            assert_eq!(ranked[0].label, want_labels[i], "{what}: text {i} label");
            let probs: Vec<f32> = (classes.iter())
                .map(|c| ranked.iter().find(|l| &l.label == c).unwrap().score)
                .collect();
            let want = floats(&case["held_out_proba"][i]);
            worst = worst.max(max_abs_diff(&probs, &want));
            assert_close(&format!("{what}: text {i}"), &probs, &want, 2e-3);
        }
        eprintln!(
            "{what}: webert's features, probabilities within {worst:e}, {} iterations",
            head.iterations
        );
    }
}

#[test]
fn a_head_refuses_another_encoder_and_bad_training_sets() {
    let g = golden("train.json");
    let minilm = engine(&model_dir("minilm"));
    let head = block_on(train::train(
        &minilm,
        &examples(&g, "sentiment"),
        TrainOptions::default(),
    ))
    .unwrap();
    assert_eq!(head.labels, ["negative", "positive"]);
    assert_eq!(head.encoder, EncoderId::of(&minilm.config));
    let other = engine(&model_dir("splade-tiny"));
    let err = block_on(train::classify(
        &other,
        &head,
        &["hello"],
        ClassifyOptions::default(),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("trained on a bert encoder of hidden size 384")
            && err.contains("hidden size 128"),
        "{err}"
    );
    let one_label: Vec<Example> = (examples(&g, "sentiment").into_iter())
        .filter(|e| e.label == "positive")
        .collect();
    let err = block_on(train::train(&minilm, &one_label, TrainOptions::default()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("at least two labels; got only `positive`"),
        "{err}"
    );
    assert!(block_on(train::train(&minilm, &[], TrainOptions::default())).is_err());
    let bad_c = TrainOptions {
        c: -1.0,
        ..Default::default()
    };
    assert!(block_on(train::train(&minilm, &examples(&g, "sentiment"), bad_c)).is_err());
}

/// `webert` itself, with the arguments; its stdout, or its stderr as the error.
fn cli(args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_webert"))
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .unwrap();
    match out.status.success() {
        true => Ok(String::from_utf8(out.stdout).unwrap()),
        false => Err(String::from_utf8(out.stderr).unwrap()),
    }
}

#[test]
fn the_cli_trains_a_head_file_and_classifies_with_it() {
    let g = golden("train.json");
    let case = (g["cases"].as_array().unwrap().iter())
        .find(|c| c["set"] == "sentiment" && c["C"] == 25.0)
        .unwrap();
    let dir = root().join("target/test-models/cli-train");
    std::fs::create_dir_all(&dir).unwrap();
    let lines: Vec<String> = (examples(&g, "sentiment").iter())
        .map(|e| serde_json::json!({"text": e.text, "label": e.label}).to_string())
        .collect();
    let data = dir.join("sentiment.jsonl");
    std::fs::write(&data, lines.join("\n") + "\n\n").unwrap();
    let (model, head) = (model_dir("minilm"), dir.join("head.safetensors"));
    let (model, head, data) = (
        model.to_str().unwrap(),
        head.to_str().unwrap(),
        data.to_str().unwrap(),
    );
    let args = [
        "train-classifier",
        "--model",
        model,
        "--data",
        data,
        "--out",
        head,
        "--c",
        "25",
        "--backend",
        "cpu",
    ];
    cli(&args).unwrap();
    let text = &held_out(&g, "sentiment")[0];
    let args = [
        "classify",
        "--model",
        model,
        "--head",
        head,
        "--text",
        text,
        "--backend",
        "cpu",
    ];
    let out: Value = serde_json::from_str(&cli(&args).unwrap()).unwrap();
    let classes = strings(&case["classes"]);
    assert_eq!(out[0]["label"], case["held_out_labels"][0]);
    for (j, c) in classes.iter().enumerate() {
        let got = out
            .as_array()
            .unwrap()
            .iter()
            .find(|l| &l["label"] == c)
            .unwrap()["score"]
            .as_f64()
            .unwrap();
        let want = case["held_out_proba"][0][j].as_f64().unwrap();
        assert!((got - want).abs() <= 2e-3, "{c}: {got} vs {want}");
    }
    let args = [
        "classify",
        "--model",
        model,
        "--head",
        head,
        "--text",
        text,
        "--top-k",
        "1",
        "--backend",
        "cpu",
    ];
    let top: Value = serde_json::from_str(&cli(&args).unwrap()).unwrap();
    assert_eq!(top.as_array().unwrap().len(), 1);

    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"text\": \"a\", \"label\": \"x\"}\n{\"text\": \"b\"}\n",
    )
    .unwrap();
    let args = [
        "train-classifier",
        "--model",
        model,
        "--data",
        bad.to_str().unwrap(),
        "--out",
        head,
    ];
    let err = cli(&args).unwrap_err();
    assert!(
        err.contains("bad.jsonl line 2: missing field `label`"),
        "{err}"
    );
    let splade = model_dir("splade-tiny");
    let args = [
        "classify",
        "--model",
        splade.to_str().unwrap(),
        "--head",
        head,
        "--text",
        "hi",
    ];
    let err = cli(&args).unwrap_err();
    assert!(
        err.contains("this classifier head was trained on a bert encoder of hidden size 384"),
        "{err}"
    );
}
