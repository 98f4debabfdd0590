//! BertForMaskedLM with legacy gamma/beta names and a decoder tied to the word embeddings:
//! MLM logits against PyTorch and the `fill-mask` pipeline.

mod common;
use common::*;
use pollster::block_on;
use webert::engine::Want;
use webert::tasks::fill_mask::fill_mask;

#[test]
fn fill_mask_matches_pipeline() {
    let g = golden("splade.json");
    let e = engine(&model_dir("splade-tiny"));
    for case in g["fill_mask"]["cases"].as_array().unwrap() {
        let text = str_of(case, "text");
        let k = case["top_k"].as_u64().unwrap() as usize;
        let got = block_on(fill_mask(&e, text, k, None)).unwrap();
        let want = case["predictions"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{text}: one list per mask");
        for (gm, wm) in got.iter().zip(want) {
            for (p, w) in gm.iter().zip(wm.as_array().unwrap()) {
                assert_eq!(p.token as u64, w["token"].as_u64().unwrap(), "{text}");
                assert_eq!(p.token_str, str_of(w, "token_str"));
                assert_eq!(p.sequence, str_of(w, "sequence"));
                assert!((p.score - w["score"].as_f64().unwrap() as f32).abs() < 1e-4);
            }
        }
    }
}

#[test]
fn mlm_logits_match_pytorch() {
    let g = golden("splade.json");
    let e = engine(&model_dir("splade-tiny"));
    for case in g["mask_logits"]["cases"].as_array().unwrap() {
        let enc = e.encode(str_of(case, "text"), None, None).unwrap();
        assert_eq!(enc.get_ids(), ids(&case["input_ids"]).as_slice());
        let masks: Vec<usize> = case["mask_positions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as usize)
            .collect();
        let out = block_on(e.run(&[enc], Want::Logits, &[masks]))
            .unwrap()
            .remove(0);
        assert_close("mask rows", &out.logits, &floats(&case["logits"]), 1e-4);
    }
    let all = &g["all_positions_logits"];
    let enc = e.encode(str_of(all, "text"), None, None).unwrap();
    let rows: Vec<usize> = (0..enc.len()).collect();
    let out = block_on(e.run(&[enc], Want::Logits, &[rows]))
        .unwrap()
        .remove(0);
    let v = e.config.vocab_size;
    let first64: Vec<f32> = out
        .logits
        .chunks(v)
        .flat_map(|r| r[..64].to_vec())
        .collect();
    assert_close(
        "all positions [:, :64]",
        &first64,
        &floats(&all["logits"]),
        1e-4,
    );
}
