//! The checks of BERT's pre-training heads against scripts/make_mlm_goldens.py's goldens,
//! shared by the CPU tests (tests/pretraining.rs) and the GPU ones (tests/gpu.rs).

use super::*;
use pollster::block_on;
use webert::engine::Engine;
use webert::tasks::next_sentence::next_sentence;
use webert::tasks::scoring::{score, ScoreOptions, Scored};

/// IsNext / NotNext probabilities of every golden pair of `kind`, one pair at a time and all
/// of them in one batch.
pub fn check_nsp(e: &Engine, kind: &str) {
    let g = golden("nsp.json");
    let cases = g["models"][kind]["cases"].as_array().unwrap();
    let pairs: Vec<(&str, &str)> = (cases.iter())
        .map(|c| (str_of(c, "text"), str_of(c, "text_pair")))
        .collect();
    let batched = block_on(next_sentence(e, &pairs, None)).unwrap();
    let mut worst = 0.0f32;
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
            worst = worst.max(max_abs_diff(&probs, &want));
        }
    }
    eprintln!(
        "NSP ({kind}, {}): worst probability diff {worst:.2e}",
        e.backend()
    );
}

/// Every golden PLL case: tokens and offsets exact, per-token log-probabilities within 1e-3,
/// the sum within 1e-3 × max(1, |PLL|). Cases of one window length run as one call.
pub fn check_pll(e: &Engine) {
    let g = golden("pll.json");
    let cases = g["cases"].as_array().unwrap();
    let mut worst = (0.0f32, 0.0f32);
    for max_len in [None, Some(24), Some(64)] {
        let mine: Vec<&serde_json::Value> = (cases.iter())
            .filter(|c| c["max_length"].as_u64().map(|m| m as usize) == max_len)
            .collect();
        let texts: Vec<&str> = mine.iter().map(|c| str_of(c, "text")).collect();
        let got = block_on(score(e, &texts, ScoreOptions { max_len })).unwrap();
        assert_eq!(got.len(), texts.len());
        for (c, r) in mine.iter().zip(&got) {
            worst = compare_pll(c, r, worst);
        }
    }
    eprintln!(
        "PLL ({}): worst token log-prob diff {:.2e}, worst PLL diff {:.2e} (relative to max(1, |PLL|))",
        e.backend(),
        worst.0,
        worst.1
    );
}

fn compare_pll(c: &serde_json::Value, r: &Scored, worst: (f32, f32)) -> (f32, f32) {
    let text = str_of(c, "text");
    let want = c["tokens"].as_array().unwrap();
    assert_eq!(r.tokens.len(), want.len(), "{text}");
    let mut token_diff = worst.0;
    for (t, w) in r.tokens.iter().zip(want) {
        assert_eq!(t.token, str_of(w, "token"), "{text}");
        let span = (w["start"].as_u64().unwrap(), w["end"].as_u64().unwrap());
        assert_eq!((t.start as u64, t.end as u64), span, "{text}: {}", t.token);
        let d = (t.log_prob - w["log_prob"].as_f64().unwrap() as f32).abs();
        assert!(d <= 1e-3, "{text}: {} log-prob off by {d}", t.token);
        token_diff = token_diff.max(d);
    }
    let pll = c["pseudo_log_likelihood"].as_f64().unwrap() as f32;
    let d = (r.pseudo_log_likelihood - pll).abs() / pll.abs().max(1.0);
    assert!(
        d <= 1e-3,
        "{text}: PLL {} vs {pll}",
        r.pseudo_log_likelihood
    );
    (token_diff, worst.1.max(d))
}
