//! Tiny seeded random-weight checkpoints of every model family and head variant
//! (`tests/tiny/<name>/`, made by `scripts/make_tiny_models.py`) against HF transformers
//! PyTorch f32: token ids and type ids, last hidden states, head logits (single inputs and
//! right-padded batches), and the `classify` task's label order and scores.
//!
//! Covered: DistilBERT (seqcls, MLM with a tied decoder), RoBERTa (token classification with
//! pad_token_id 1, sequence classification of pairs), XLM-R (MLM, Unigram tokenizer), ELECTRA
//! (QA with embedding_size != hidden_size, seqcls), BERT with `gelu_new` in f16, a bf16 base
//! model sharded into two files, and `bert.`-prefixed legacy `gamma`/`beta` names with a
//! multi-label head.

mod common;
use common::*;
use pollster::block_on;
use serde_json::Value;
use std::path::PathBuf;
use webert::engine::{Engine, Want};
use webert::model::Architecture;
use webert::tasks::classify::{classify, ClassifyOptions};
use webert::tasks::embed::{embed, EmbedOptions, Pooling};
use webert::tasks::fill_mask::fill_mask;

const TOL: f32 = 1e-4;

fn tiny_dir(name: &str) -> PathBuf {
    root().join("tests/tiny").join(name)
}

fn tiny_golden(name: &str) -> Value {
    let path = tiny_dir(name).join("golden.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn positions(v: &Value) -> Vec<usize> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_u64().unwrap() as usize).collect())
        .unwrap_or_default()
}

/// Like `assert_close`, but says where the largest difference is and what the values were.
/// Differences count relative to values above 1 (f32 sums of wide weights: the relaxed-SIMD
/// wasm build's fused multiply-adds moved a 1.53 of nomic-bert-tokcls by 1.005e-4).
#[track_caller]
fn close(what: &str, got: &[f32], want: &[f32], cols: usize) {
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: {} values, golden has {}",
        got.len(),
        want.len()
    );
    let (i, d) = got
        .iter()
        .zip(want)
        .map(|(x, y)| (x - y).abs() / y.abs().max(1.0))
        .enumerate()
        .fold((0, 0.0f32), |(bi, bd), (i, d)| {
            if d > bd || d.is_nan() {
                (i, d)
            } else {
                (bi, bd)
            }
        });
    assert!(
        d <= TOL,
        "{what}: max diff {d:e} (relative above 1) > {TOL:e} at row {} col {}: got {} want {}",
        i / cols.max(1),
        i % cols.max(1),
        got[i],
        want[i]
    );
}

fn softmax(x: &[f32]) -> Vec<f32> {
    let m = x.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let e: Vec<f32> = x.iter().map(|v| (v - m).exp()).collect();
    let s: f32 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

fn expected_arch(head: &str) -> Architecture {
    match head {
        "seqcls" => Architecture::SequenceClassification,
        "tokcls" => Architecture::TokenClassification,
        "qa" => Architecture::QuestionAnswering,
        "mlm" => Architecture::MaskedLm,
        "base" => Architecture::Base,
        other => panic!("unknown head `{other}` in golden.json"),
    }
}

/// Every case of one folder: tokenization, logits (head on), hidden states (head off), and the
/// task-level checks of the head.
fn check(name: &str) {
    let g = tiny_golden(name);
    let dir = tiny_dir(name);
    let e = try_engine(&dir).unwrap_or_else(|err| panic!("{name}: loading: {err}"));
    let head = str_of(&g, "head");
    assert_eq!(
        e.architecture(),
        expected_arch(head),
        "{name}: architecture"
    );
    let h = e.config.hidden_size;
    let labels: Vec<String> = g["id2label"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    if !labels.is_empty() {
        assert_eq!(e.config.labels(labels.len()), labels, "{name}: id2label");
    }
    for case in g["cases"].as_array().unwrap() {
        let cname = format!("{name}/{}", str_of(case, "name"));
        let inputs = case["inputs"].as_array().unwrap();
        let mut encs = Vec::new();
        let mut picked = Vec::new();
        for (i, inp) in inputs.iter().enumerate() {
            let (text, pair) = (str_of(inp, "text"), opt_str(inp, "text_pair"));
            let enc = e
                .encode(text, pair, None)
                .unwrap_or_else(|err| panic!("{cname}[{i}]: encode: {err}"));
            assert_eq!(
                enc.get_ids(),
                ids(&inp["input_ids"]).as_slice(),
                "{cname}[{i}]: input ids of {text:?} (tokens {:?})",
                enc.get_tokens()
            );
            assert_eq!(
                enc.get_type_ids(),
                ids(&inp["token_type_ids"]).as_slice(),
                "{cname}[{i}]: type ids"
            );
            encs.push(enc);
            picked.push(positions(&inp["mask_positions"]));
        }
        if head != "mlm" {
            picked.clear();
        }

        let with_head = block_on(e.run(&encs, Want::Both, &picked))
            .unwrap_or_else(|err| panic!("{cname}: run with head: {err}"));
        let without = block_on(e.run(&encs, Want::Hidden, &[]))
            .unwrap_or_else(|err| panic!("{cname}: run without head: {err}"));
        let logits_only = block_on(e.run(&encs, Want::Logits, &picked))
            .unwrap_or_else(|err| panic!("{cname}: run for logits: {err}"));
        assert_eq!(with_head.len(), inputs.len());
        for (i, (both, only)) in with_head.iter().zip(&logits_only).enumerate() {
            assert_eq!(both.logits, only.logits, "{cname}[{i}]: logits alone");
            assert!(only.hidden.is_empty(), "{cname}[{i}]: hidden copied out");
            assert!(without[i].logits.is_empty(), "{cname}[{i}]: head ran");
        }
        for (i, inp) in inputs.iter().enumerate() {
            let want_h = floats(&inp["last_hidden_state"]);
            close(
                &format!("{cname}[{i}]: last_hidden_state"),
                &without[i].hidden,
                &want_h,
                h,
            );
            close(
                &format!("{cname}[{i}]: last_hidden_state (head run)"),
                &with_head[i].hidden,
                &want_h,
                h,
            );
            match inp.get("logits") {
                Some(l) => {
                    let want = floats(l);
                    let cols = match head {
                        "qa" => 2,
                        "mlm" => e.config.vocab_size,
                        _ => labels.len().max(1),
                    };
                    close(
                        &format!("{cname}[{i}]: logits"),
                        &with_head[i].logits,
                        &want,
                        cols,
                    );
                }
                None => assert!(
                    with_head[i].logits.is_empty(),
                    "{cname}[{i}]: a base model gave logits"
                ),
            }
        }

        if head == "seqcls" {
            check_classify(&e, &g, &cname, inputs, &labels);
        }
        check_pooled(&e, &cname, inputs);
        if head == "mlm" && inputs.len() == 1 {
            check_fill_mask_top1(&e, &cname, &inputs[0]);
        }
    }
}

/// Mean-pooled embeddings (`mean_pooled`) and their L2-normalized form
/// (`sentence_embedding`, sentence-transformers' `Normalize`), where the golden has them.
fn check_pooled(e: &Engine, cname: &str, inputs: &[Value]) {
    for (key, normalize) in [("mean_pooled", false), ("sentence_embedding", true)] {
        let wanted: Vec<(&str, Vec<f32>)> = (inputs.iter())
            .filter(|i| i.get(key).is_some() && i.get("text_pair").is_none())
            .map(|i| (str_of(i, "text"), floats(&i[key])))
            .collect();
        if wanted.is_empty() {
            continue;
        }
        let texts: Vec<&str> = wanted.iter().map(|w| w.0).collect();
        let opts = EmbedOptions {
            pooling: Pooling::Mean,
            normalize,
            truncation: None,
        };
        let got =
            block_on(embed(e, &texts, opts)).unwrap_or_else(|err| panic!("{cname}: embed: {err}"));
        for (i, (g, (_, w))) in got.iter().zip(&wanted).enumerate() {
            close(&format!("{cname}[{i}]: {key}"), g, w, w.len());
        }
        // A sentence-transformers folder's own settings (modules.json) give its embeddings.
        if normalize && e.config.sentence.is_some() {
            let opts = EmbedOptions::for_model(&e.config, None, None, None).unwrap();
            let got = block_on(embed(e, &texts, opts)).unwrap();
            for (i, (g, (_, w))) in got.iter().zip(&wanted).enumerate() {
                close(&format!("{cname}[{i}]: default embedding"), g, w, w.len());
            }
        }
    }
}

/// `classify` (default options) against softmax / sigmoid of the golden logits: label order
/// (best first) and scores. Runs the whole case as one call, so batches are padded too.
fn check_classify(e: &Engine, g: &Value, cname: &str, inputs: &[Value], labels: &[String]) {
    let multi = opt_str(g, "problem_type") == Some("multi_label_classification");
    assert_eq!(e.config.multi_label, multi, "{cname}: multi_label");
    let pairs: Vec<(&str, Option<&str>)> = inputs
        .iter()
        .map(|i| (str_of(i, "text"), opt_str(i, "text_pair")))
        .collect();
    let got = block_on(classify(e, &pairs, ClassifyOptions::default()))
        .unwrap_or_else(|err| panic!("{cname}: classify: {err}"));
    for (i, (inp, ranked)) in inputs.iter().zip(&got).enumerate() {
        let logits = floats(&inp["logits"]);
        let scores: Vec<f32> = if multi {
            logits.iter().map(|&x| 1.0 / (1.0 + (-x).exp())).collect()
        } else {
            softmax(&logits)
        };
        let mut want: Vec<(String, f32)> = labels.iter().cloned().zip(scores).collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1));
        let got_labels: Vec<&str> = ranked.iter().map(|l| l.label.as_str()).collect();
        let want_labels: Vec<&str> = want.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(
            got_labels,
            want_labels,
            "{cname}[{i}]: classify label order ({})",
            if multi { "sigmoid" } else { "softmax" }
        );
        let gs: Vec<f32> = ranked.iter().map(|l| l.score).collect();
        let ws: Vec<f32> = want.iter().map(|l| l.1).collect();
        close(
            &format!("{cname}[{i}]: classify scores"),
            &gs,
            &ws,
            gs.len(),
        );
    }
}

/// `fill_mask` top-1 token per mask equals the argmax of the golden mask-row logits (where the
/// best and second-best logits are not a near tie).
fn check_fill_mask_top1(e: &Engine, cname: &str, inp: &Value) {
    let v = e.config.vocab_size;
    let logits = floats(&inp["logits"]);
    let preds = block_on(fill_mask(e, str_of(inp, "text"), 2, None))
        .unwrap_or_else(|err| panic!("{cname}: fill_mask: {err}"));
    assert_eq!(preds.len(), logits.len() / v, "{cname}: one list per mask");
    for (m, (row, p)) in logits.chunks(v).zip(&preds).enumerate() {
        let mut order: Vec<usize> = (0..v).collect();
        order.sort_by(|a, b| row[*b].total_cmp(&row[*a]));
        if row[order[0]] - row[order[1]] < 1e-3 {
            continue;
        }
        assert_eq!(
            p[0].token as usize, order[0],
            "{cname}: mask {m} top-1 token"
        );
        let want = softmax(row)[order[0]];
        assert!(
            (p[0].score - want).abs() <= TOL,
            "{cname}: mask {m} top-1 score {} vs {want}",
            p[0].score
        );
    }
}

#[test]
fn distilbert_seqcls() {
    check("distilbert-seqcls");
}

#[test]
fn distilbert_mlm_tied() {
    check("distilbert-mlm");
}

#[test]
fn roberta_tokcls() {
    check("roberta-tokcls");
}

#[test]
fn roberta_seqcls_pairs() {
    check("roberta-seqcls");
}

#[test]
fn xlmr_mlm() {
    check("xlmr-mlm");
}

#[test]
fn electra_qa_projected_embeddings() {
    check("electra-qa");
}

#[test]
fn electra_seqcls() {
    check("electra-seqcls");
}

#[test]
fn bert_gelu_tanh_f16() {
    check("bert-gelu-tanh-f16");
}

#[test]
fn bert_bf16_sharded() {
    check("bert-bf16-sharded");
}

#[test]
fn bert_prefixed_legacy_multilabel() {
    check("bert-prefixed-legacy");
}

#[test]
fn mpnet_sentence_transformers() {
    check("mpnet-base-st");
}

#[test]
fn mpnet_mlm() {
    check("mpnet-mlm");
}

#[test]
fn mpnet_seqcls_pairs() {
    check("mpnet-seqcls");
}

#[test]
fn mpnet_tokcls() {
    check("mpnet-tokcls");
}

#[test]
fn mpnet_qa() {
    check("mpnet-qa");
}

#[test]
fn albert_seqcls_shared_layers() {
    check("albert-seqcls");
}

#[test]
fn albert_mlm() {
    check("albert-mlm");
}

#[test]
fn albert_tokcls() {
    check("albert-tokcls");
}

#[test]
fn albert_qa() {
    check("albert-qa");
}

#[test]
fn jina_v2_alibi_gated() {
    check("jina-v2-base");
}

#[test]
fn jina_v2_six_heads() {
    check("jina-v2-6heads");
}

#[test]
fn deberta_v3_seqcls_disentangled() {
    check("deberta-v3-seqcls");
}

#[test]
fn deberta_v1_seqcls_interleaved_in_proj() {
    check("deberta-v1-seqcls");
}

#[test]
fn deberta_v1_mlm() {
    check("deberta-v1-mlm");
}

#[test]
fn roformer_seqcls_rotary() {
    check("roformer-seqcls");
}

#[test]
fn roformer_mlm_rotary_value() {
    check("roformer-mlm");
}

#[test]
fn deberta_v3_mlm() {
    check("deberta-v3-mlm");
}

#[test]
fn deberta_v3_tokcls() {
    check("deberta-v3-tokcls");
}

#[test]
fn deberta_v3_qa() {
    check("deberta-v3-qa");
}

#[test]
fn modernbert_mlm_hub_config_keys() {
    check("modernbert-mlm");
}

#[test]
fn modernbert_seqcls_past_512_tokens() {
    check("modernbert-seqcls");
}

#[test]
fn modernbert_seqcls_mean_pooling() {
    check("modernbert-seqcls-mean");
}

#[test]
fn modernbert_tokcls_every_bias() {
    check("modernbert-tokcls");
}

#[test]
fn modernbert_qa() {
    check("modernbert-qa");
}

/// EuroBERT: pre-RMSNorm, SwiGLU, rotary, no biases, an undecorated `lm_head`; Llama 3's
/// byte-level BPE with its specials.
#[test]
fn eurobert_mlm() {
    check("eurobert-mlm");
    // The specials as the config names them: padding is the end token.
    let e = try_engine(&tiny_dir("eurobert-mlm")).unwrap();
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(tiny_dir("eurobert-mlm").join("config.json")).unwrap(),
    )
    .unwrap();
    let id = |k: &str| config[k].as_u64().unwrap() as u32;
    assert_eq!(e.tokenizer.pad_id, id("pad_token_id"));
    assert_eq!(e.tokenizer.mask_id, Some(id("mask_token_id")));
    assert_eq!(e.tokenizer.mask_token.as_deref(), Some("<|mask|>"));
    let enc = e.encode("a b", None, None).unwrap();
    let ids = enc.get_ids();
    assert_eq!(
        (ids[0], ids[ids.len() - 1]),
        (id("bos_token_id"), id("eos_token_id"))
    );
}

/// `classifier_pooling` late (the default): the head on every token, its logits averaged;
/// 1024 positions, an input of 618 tokens (rope_theta 1000: three of the four frequencies
/// wrap, the slowest turns 3.5 rad).
#[test]
fn eurobert_seqcls_late_pooling() {
    check("eurobert-seqcls");
}

#[test]
fn eurobert_seqcls_bos_pooling() {
    check("eurobert-seqcls-bos");
}

/// Mean pooling, and 2 K/V heads for 4 query heads (grouped-query attention).
#[test]
fn eurobert_seqcls_mean_grouped_kv_heads() {
    check("eurobert-seqcls-mean-gqa");
}

/// The Hub's remote-code layout: `clf_pooling` (mean), a flat `rope_theta`, `out_proj`.
#[test]
fn eurobert_seqcls_hub_layout() {
    check("eurobert-seqcls-hub");
}

/// `attention_bias` and `mlp_bias` on.
#[test]
fn eurobert_tokcls_biases() {
    check("eurobert-tokcls");
}

#[test]
fn nomic_bert_seqcls_swiglu_unbiased() {
    check("nomic-bert-seqcls");
}

#[test]
fn nomic_bert_mlm() {
    check("nomic-bert-mlm");
}

#[test]
fn nomic_bert_tokcls() {
    check("nomic-bert-tokcls");
}

#[test]
fn gte_tokcls() {
    check("gte-tokcls");
}

#[test]
fn roformer_tokcls() {
    check("roformer-tokcls");
}

/// RoFormer's span head, V rotated too.
#[test]
fn roformer_qa() {
    check("roformer-qa");
}

/// nomic-embed-text-v1.5's config keys (remote code) on the same layout: read as transformers
/// 5's; with `rotary_scaling_factor` set, inputs reach `n_positions` (8192), past the trained
/// 2048.
#[test]
fn nomic_bert_hub_config() {
    check("nomic-bert-hub");
    let e = try_engine(&tiny_dir("nomic-bert-hub")).unwrap();
    assert_eq!(e.config.max_sequence_len(), 8192);
    assert_eq!(e.config.gate_act, Some(webert::model::Activation::Silu));
}

/// Dynamic NTK scaling past `max_trained_positions` (24 here): the 44- and 162-token inputs
/// each turn by their own length's base, the short ones by the trained one, in one batch too.
#[test]
fn nomic_bert_dynamic_ntk_past_the_trained_length() {
    check("nomic-bert-ntk-hub");
    let e = try_engine(&tiny_dir("nomic-bert-ntk-hub")).unwrap();
    let d = e.config.rotary.unwrap().dynamic.unwrap();
    assert_eq!((d.trained, d.factor), (24, 2.0));
    assert_eq!(e.config.max_sequence_len(), 512);
}

#[test]
fn gte_seqcls_up_gate() {
    check("gte-seqcls");
}

#[test]
fn gte_mlm_linear_rope_scaling() {
    check("gte-mlm");
}

/// gte-multilingual's remote-code layout: `model_type: new`, the base saved under `new.`, and
/// its fixed NTK rope scaling (a larger base, every angle scaled by `factor^(-2/d)`).
#[test]
fn gte_new_remote_code_layout_and_ntk_scaling() {
    check("gte-new-hub");
    let e = try_engine(&tiny_dir("gte-new-hub")).unwrap();
    let r = e.config.rotary.unwrap();
    assert_eq!(r.theta, 320_000.0);
    assert!(
        (r.position_scale - 2f64.powf(-0.25)).abs() < 1e-12,
        "{}",
        r.position_scale
    );
}

/// Every folder under tests/tiny has a test above (a new folder cannot go unchecked).
#[test]
fn every_tiny_folder_is_tested() {
    let mut names: Vec<String> = std::fs::read_dir(root().join("tests/tiny"))
        .unwrap()
        .filter_map(|d| d.ok())
        .filter(|d| d.path().join("golden.json").is_file())
        .map(|d| d.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "albert-mlm",
            "albert-qa",
            "albert-seqcls",
            "albert-tokcls",
            "bert-bf16-sharded",
            "bert-gelu-tanh-f16",
            "bert-prefixed-legacy",
            "deberta-v1-mlm",
            "deberta-v1-seqcls",
            "deberta-v3-mlm",
            "deberta-v3-qa",
            "deberta-v3-seqcls",
            "deberta-v3-tokcls",
            "distilbert-mlm",
            "distilbert-seqcls",
            "electra-qa",
            "electra-seqcls",
            "eurobert-mlm",
            "eurobert-seqcls",
            "eurobert-seqcls-bos",
            "eurobert-seqcls-hub",
            "eurobert-seqcls-mean-gqa",
            "eurobert-tokcls",
            "gte-mlm",
            "gte-new-hub",
            "gte-seqcls",
            "gte-tokcls",
            "jina-v2-6heads",
            "jina-v2-base",
            "modernbert-mlm",
            "modernbert-qa",
            "modernbert-seqcls",
            "modernbert-seqcls-mean",
            "modernbert-tokcls",
            "mpnet-base-st",
            "mpnet-mlm",
            "mpnet-qa",
            "mpnet-seqcls",
            "mpnet-tokcls",
            "nomic-bert-hub",
            "nomic-bert-mlm",
            "nomic-bert-ntk-hub",
            "nomic-bert-seqcls",
            "nomic-bert-tokcls",
            "roberta-seqcls",
            "roberta-tokcls",
            "roformer-mlm",
            "roformer-qa",
            "roformer-seqcls",
            "roformer-tokcls",
            "xlmr-mlm",
        ]
    );
}
