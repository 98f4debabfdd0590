//! The prefetch trial WebAssembly runs in its first forwards (natively started by a test hook):
//! its forwards, timed with the f32 linears alternating, answer bit for bit as untimed ones, and
//! it ends in a choice that the GEMMs then follow.

mod common;
use common::*;
use pollster::block_on;
use webert::cpu::gemm;
use webert::engine::Want;

#[test]
fn trial_forwards_answer_as_untimed_ones_and_end_in_a_choice() {
    let engine = engine(&root().join("tests/tiny/distilbert-seqcls"));
    let texts = [
        "a short one",
        "Call Ana at 555-0100 before the meeting in Lisbon.",
    ];
    let untimed: Vec<Vec<u32>> = texts.iter().map(|t| answer_bits(&engine, t)).collect();
    assert!(engine.weight_prefetch().ends_with("as the CPU wants"));

    engine.start_prefetch_trial_for_test();
    // Forwards of more than 64 token rows are not the trial's: two windows of 33 to 64 here.
    let window = (1..)
        .map(|n| {
            engine
                .tokenizer
                .encode("word ".repeat(n).as_str(), None)
                .unwrap()
        })
        .find(|w| w.get_ids().len() > 32)
        .unwrap();
    assert!(window.get_ids().len() <= 64);
    for _ in 0..30 {
        let batch = [window.clone(), window.clone()];
        block_on(engine.run(&batch, Want::Hidden, &[])).unwrap();
    }
    let state = engine.weight_prefetch();
    assert!(state.ends_with("being timed (0 pairs so far)"), "{state}");
    let mut forwards = 0;
    while engine.weight_prefetch().contains("being timed") {
        assert!(forwards < 100, "no choice after {forwards} forwards");
        let i = forwards % texts.len();
        assert_eq!(
            answer_bits(&engine, texts[i]),
            untimed[i],
            "trial forward {forwards}"
        );
        // The idle-time warm-up's forwards count too.
        let window = engine.tokenizer.encode(texts[i], None).unwrap();
        engine.cpu_warm_up(&[window]).unwrap();
        forwards += 2;
    }
    let state = engine.weight_prefetch();
    let on = state.starts_with("on");
    assert!(state.contains("timed: "), "{state}");
    assert_eq!(gemm::prefetch_override(), Some(on), "{state}");
    assert!(
        (12..=44).contains(&forwards),
        "{forwards} forwards: {state}"
    );

    // The choice holds for the instance: a model loaded after times nothing.
    let next = common::engine(&root().join("tests/tiny/distilbert-seqcls"));
    next.start_prefetch_trial_for_test();
    assert!(next.weight_prefetch().ends_with(", set before this model"));
    gemm::set_prefetch(None);
}
