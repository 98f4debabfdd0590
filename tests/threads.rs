//! The thread pool cuts GEMMs into panel runs, attention into (sequence, head) pairs and the
//! row ops into row runs; every output element is still computed by one kernel call in one
//! order, so any thread count gives bit-identical results, for f32 and integer weights alike.

mod common;
use common::*;
use webert::cpu::{kernels, pool};
use webert::exec::{Batch, Quantized, Want};

fn batch(tok_ids: &[Vec<u32>], pad: u32) -> Batch {
    let l = tok_ids.iter().map(Vec::len).max().unwrap();
    let mut ids = Vec::new();
    for t in tok_ids {
        ids.extend(t);
        ids.resize(ids.len() + l - t.len(), pad);
    }
    Batch {
        type_ids: vec![0; ids.len()],
        ids,
        lens: tok_ids.iter().map(Vec::len).collect(),
        seq_len: l,
        picked: vec![],
    }
}

fn hidden(model: &str, kernel: &'static kernels::Kernel, q: Quantized, threads: usize) -> Vec<f32> {
    let (mut ex, tok) = cpu_executor(&model_dir(model), kernel, q);
    let texts = [
        "Threads split the work; the answers must not move by one bit. Call Ana at 555-0100.",
        "short",
        "",
    ];
    let ids: Vec<Vec<u32>> = texts
        .iter()
        .map(|t| tok.encode(t, None).unwrap().get_ids().to_vec())
        .collect();
    pool::set_threads(threads);
    let out = ex.forward(&batch(&ids, tok.pad_id), Want::Both).unwrap();
    pool::set_threads(1);
    let mut all = out.hidden.unwrap();
    all.extend(out.logits.unwrap_or_default());
    all
}

#[test]
fn any_thread_count_gives_identical_outputs() {
    for kernel in kernels::available() {
        for (model, q) in [("minilm", Quantized::F32), ("pii", Quantized::Int)] {
            let serial = hidden(model, kernel, q, 1);
            for threads in [2, 3, 8] {
                let parallel = hidden(model, kernel, q, threads);
                assert!(pool::threads() == 1);
                assert_eq!(serial.len(), parallel.len());
                let same = serial
                    .iter()
                    .zip(&parallel)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(
                    same,
                    "{model} on {} with {threads} threads differs",
                    kernel.name
                );
            }
        }
    }
}
