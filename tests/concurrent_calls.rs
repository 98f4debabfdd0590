//! Calls on one engine from several threads share its CPU model and each run in a state of
//! their own: they overlap (the engine makes a state per call in flight, up to its thread
//! count) and every answer is bit for bit the answer of the same input run alone.

mod common;
use common::*;
use pollster::block_on;
use std::path::Path;
use webert::engine::{Engine, LoadOptions};
use webert::model::ModelFiles;

const TEXTS: [&str; 6] = [
    "Threads share one model; each call keeps its own scratch.",
    "short",
    "Call Ana at 555-0100 before the meeting in Lisbon on Tuesday.",
    "",
    "A longer sentence, so that the buffers of one call are larger than another's and a state \
     sized for one batch serves the next.",
    "Paris",
];

/// CPU threads of the engine: the most states it makes.
const THREADS: usize = 2;
/// Threads calling it: one more, which waits for a state.
const CALLERS: usize = THREADS + 1;
const ROUNDS: usize = 4;

fn load(dir: &Path, quantized: webert::exec::Quantized) -> Engine {
    let options = LoadOptions {
        threads: Some(THREADS),
        quantized,
        ..LoadOptions::cpu()
    };
    block_on(Engine::load(ModelFiles::from_dir(dir).unwrap(), options)).unwrap()
}

fn calls_overlap_and_answer_as_alone(engine: &Engine) {
    let alone: Vec<Vec<u32>> = TEXTS.iter().map(|t| answer_bits(engine, t)).collect();
    assert_eq!(
        engine.cpu_states_made_for_test(),
        1,
        "calls one at a time share a state"
    );
    engine.meet_in_cpu_calls_for_test(THREADS);
    std::thread::scope(|s| {
        for t in 0..CALLERS {
            let alone = &alone;
            s.spawn(move || {
                for round in 0..ROUNDS {
                    for i in 0..TEXTS.len() {
                        // each thread takes the texts in another order
                        let i = (i * (t + 1) + round) % TEXTS.len();
                        let got = answer_bits(engine, TEXTS[i]);
                        assert!(got == alone[i], "thread {t}: {:?} differs", TEXTS[i]);
                    }
                }
            });
        }
    });
    assert_eq!(
        engine.cpu_states_made_for_test(),
        THREADS,
        "two calls ran at once, on a state each, and the third caller waited for one"
    );
}

#[test]
fn the_cpu_model_and_engine_are_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<webert::cpu::CpuModel>();
    shared::<Engine>();
}

#[test]
fn concurrent_calls_on_a_tiny_model_answer_as_alone() {
    let dir = root().join("tests/tiny/modernbert-tokcls");
    calls_overlap_and_answer_as_alone(&load(&dir, webert::exec::Quantized::F32));
}

#[test]
fn concurrent_calls_on_q8_weights_answer_as_alone() {
    calls_overlap_and_answer_as_alone(&load(&model_dir("pii"), webert::exec::Quantized::Int));
}
