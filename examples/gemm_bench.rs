//! GFLOP/s of every available micro-kernel on the GEMM shapes of MiniLM at 128 tokens
//! (natively, or for wasm32-wasip1 in Node and Chromium: `scripts/wasm_bench.sh`).
use std::time::Instant;
use webert::cpu::gemm::{gemm, PackedB};
use webert::cpu::kernels::available;

fn main() {
    // (m, n, k): qkv, attention output, FFN in, FFN out, scores, scores · V
    let shapes = [
        (128, 1152, 384),
        (128, 384, 384),
        (128, 1536, 384),
        (128, 384, 1536),
        (128, 128, 32),
        (128, 32, 128),
    ];
    for kern in available() {
        let mut line = format!("{:>16}", format!("{kern:?}"));
        let mut total = (0.0, 0.0);
        for &(m, n, k) in &shapes {
            let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.1).collect();
            let b: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32 * 0.1).collect();
            let packed = PackedB::from_nk(kern, n, k, &b, k);
            let (mut c, mut scratch) = (vec![0.0; m * n], Vec::new());
            let reps = (2e9 / (2 * m * n * k) as f64).ceil() as usize;
            let mut best = f64::MAX;
            for _ in 0..3 {
                let t = Instant::now();
                for _ in 0..reps {
                    gemm(kern, m, &a, k, &packed, &mut c, n, false, &mut scratch);
                }
                best = best.min(t.elapsed().as_secs_f64() / reps as f64);
            }
            let flop = (2 * m * n * k) as f64;
            total = (total.0 + flop, total.1 + best);
            line += &format!(" {m}x{n}x{k} {:5.1}", flop / best / 1e9);
        }
        println!("{line}  all {:5.1} GFLOP/s", total.0 / total.1 / 1e9);
    }
}
