//! GFLOP/s of every available micro-kernel on the GEMM shapes of MiniLM at 128 tokens (or
//! `--tokens N`; `--cold`: weights cycle through copies of 64 MB or more, so they come from
//! memory as in a forward pass, not from cache; `--prefetch on|off`)
//! (natively, or for wasm32-wasip1 in Node and Chromium: `scripts/wasm_bench.sh`), f32 and,
//! where a kernel has one, the int8 tile on q4 weights (its results checked against the
//! portable scalar tile's); and every q8 tile (per-channel int8 weights, activations quantized
//! per call as `DynamicQuantizeLinear`, quantization included in the timing; results checked
//! bit for bit against the portable tile of the same layout).
use std::time::Instant;
use webert::cpu::attention::{attention, AttentionScratch, Shape};
use webert::cpu::gemm::{gemm, PackedB};
use webert::cpu::kernels::{available, quant_reference};
use webert::cpu::math::Epilogue;
use webert::cpu::qgemm::{qgemm, qgemm_channel};
use webert::cpu::qpack::PackedQ;
use webert::cpu::quantize::{QScratch, RowGroup};
use webert::model::{Activation, BlockQuant, ChannelQuant};

/// Best-of-3 seconds per call of `f`, repeated to about 2 GFLOP per timing.
fn time(flop: usize, mut f: impl FnMut()) -> f64 {
    let reps = (2e9 / flop as f64).ceil() as usize;
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() / reps as f64);
    }
    best
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let t = args
        .iter()
        .position(|a| a == "--tokens")
        .map_or(128, |i| args[i + 1].parse().expect("--tokens N"));
    let cold = args.iter().any(|a| a == "--cold");
    // `--prefetch on|off`: the f32 GEMMs fetch the weights ahead or not (else as the CPU wants).
    if let Some(i) = args.iter().position(|a| a == "--prefetch") {
        webert::cpu::gemm::set_prefetch(Some(args[i + 1] == "on"));
    }
    // (m, n, k): qkv, attention output, FFN in, FFN out, scores, scores · V
    let shapes = [
        (t, 1152, 384),
        (t, 384, 384),
        (t, 1536, 384),
        (t, 384, 1536),
        (t, t, 32),
        (t, 32, t),
    ];
    // V8 compiles the optimized code of each kernel in the background after its first calls,
    // which slowed whichever kernel was timed first: every kernel runs every shape once before.
    for kern in available() {
        for &(m, n, k) in &shapes {
            let packed = PackedB::from_nk(kern, n, k, &vec![0.5; n * k], k);
            let (a, mut c, mut scratch) = (vec![0.5; m * k], vec![0.0; m * n], Vec::new());
            for _ in 0..(1e9 / (2 * m * n * k) as f64) as usize + 1 {
                gemm(kern, m, &a, k, &packed, &mut c, n, false, &mut scratch);
            }
        }
    }
    for kern in available() {
        let mut line = format!("{:>16}", format!("{kern:?}"));
        let mut total = (0.0, 0.0);
        for &(m, n, k) in &shapes {
            let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.1).collect();
            let b: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32 * 0.1).collect();
            let copies = if cold {
                (64 << 20) / (4 * n * k) + 1
            } else {
                1
            };
            let packed: Vec<_> = (0..copies)
                .map(|_| PackedB::from_nk(kern, n, k, &b, k))
                .collect();
            let (mut c, mut scratch, mut next) = (vec![0.0; m * n], Vec::new(), 0);
            let best = time(2 * m * n * k, || {
                next = (next + 1) % copies;
                gemm(
                    kern,
                    m,
                    &a,
                    k,
                    &packed[next],
                    &mut c,
                    n,
                    false,
                    &mut scratch,
                )
            });
            let flop = (2 * m * n * k) as f64;
            total = (total.0 + flop, total.1 + best);
            line += &format!(" {m}x{n}x{k} {:5.1}", flop / best / 1e9);
        }
        println!("{line}  all {:5.1} GFLOP/s", total.0 / total.1 / 1e9);
    }
    for kern in available() {
        let Some(qk) = kern.quant else { continue };
        let reference = quant_reference(qk);
        let mut line = format!("{:>16}", qk.name);
        let (mut total, mut worst) = ((0.0, 0.0), 0f32);
        for &(m, n, k) in &shapes[..4] {
            let a: Vec<f32> = (0..m * k)
                .map(|i| ((i * 37) % 101) as f32 * 0.02 - 1.0)
                .collect();
            let q = BlockQuant {
                block: 32,
                codes: (0..n * k).map(|i| ((i * 7) % 16) as u8).collect(),
                scales: (0..n * k / 32)
                    .map(|i| 0.01 + (i % 9) as f32 * 1e-3)
                    .collect(),
                zero_points: vec![8.0; n * k / 32],
            };
            let packed = PackedQ::new(qk, n, k, &q).expect("packable");
            let (mut c, mut scratch) = (vec![0.0; m * n], QScratch::default());
            let best = time(2 * m * n * k, || {
                qgemm(qk, m, &a, k, &packed, &mut c, n, &mut scratch)
            });
            let mut want = vec![0.0; m * n];
            let packed_ref = PackedQ::new(reference, n, k, &q).expect("packable");
            qgemm(reference, m, &a, k, &packed_ref, &mut want, n, &mut scratch);
            worst = c
                .iter()
                .zip(&want)
                .fold(worst, |w, (x, y)| w.max((x - y).abs()));
            let flop = (2 * m * n * k) as f64;
            total = (total.0 + flop, total.1 + best);
            line += &format!(" {m}x{n}x{k} {:5.1}", flop / best / 1e9);
        }
        println!(
            "{line}  all {:5.1} GOP/s, max |diff| vs scalar {worst:.1e}",
            total.0 / total.1 / 1e9
        );
    }
    // q8: reduce_range int8 weights (onnxruntime's per-channel QInt8), one row group.
    for kern in available() {
        for &qk in kern.q8 {
            let reference = quant_reference(qk);
            let mut line = format!("{:>16}", qk.name);
            let (mut total, mut equal) = ((0.0, 0.0), true);
            for &(m, n, k) in &shapes[..4] {
                let a: Vec<f32> = (0..m * k)
                    .map(|i| ((i * 37) % 101) as f32 * 0.02 - 1.0)
                    .collect();
                let q = ChannelQuant {
                    signed: true,
                    // -63..=63, and as in onnxruntime's reduce_range exports about one
                    // column in 32 spans -64..=64 (a spilled code in the relaxed int8 tile)
                    codes: (0..n * k)
                        .map(|i| match (i / k % 32, i % k) {
                            (0, 0) => 64,
                            (0, 1) => -64,
                            _ => (i * 7 % 127) as i32 - 63,
                        } as i8 as u8)
                        .collect(),
                    scales: (0..n).map(|i| 0.01 + (i % 9) as f32 * 1e-3).collect(),
                    zero_points: vec![0; n],
                };
                let groups = [RowGroup {
                    start: 0,
                    end: m,
                    real: m,
                }];
                let Some(packed) = PackedQ::channel(qk, n, k, &q) else {
                    line += &format!(" {m}x{n}x{k}   n/a");
                    continue;
                };
                let (mut c, mut scratch) = (vec![0.0; m * n], QScratch::default());
                let best = time(2 * m * n * k, || {
                    qgemm_channel(qk, m, &a, k, &packed, &mut c, n, &mut scratch, &groups)
                });
                let mut want = vec![0.0; m * n];
                if let Some(packed_ref) = PackedQ::channel(reference, n, k, &q) {
                    qgemm_channel(
                        reference,
                        m,
                        &a,
                        k,
                        &packed_ref,
                        &mut want,
                        n,
                        &mut scratch,
                        &groups,
                    );
                    equal &= c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                }
                let flop = (2 * m * n * k) as f64;
                total = (total.0 + flop, total.1 + best);
                line += &format!(" {m}x{n}x{k} {:5.1}", flop / best / 1e9);
            }
            println!(
                "{line}  all {:5.1} GOP/s (q8, {}), bit-equal to the scalar tile: {equal}",
                total.0 / total.1 / 1e9,
                kern.name
            );
        }
    }
    // The elementwise work of one MiniLM-L6 forward at 128 tokens, per kernel's row ops (each
    // timing includes copying in fresh inputs, so that repeated calls never reach denormals).
    for kern in available() {
        let (m, h, ffn, heads) = (128, 384, 1536, 12);
        let input = |n: usize, p: usize| -> Vec<f32> {
            (0..n)
                .map(|i| (i % p) as f32 * 8.0 / p as f32 - 4.0)
                .collect()
        };
        let (ffn_in, scores_in, hidden_in) =
            (input(m * ffn, 97), input(m * m, 89), input(m * h, 83));
        let (mut ffn_rows, mut scores, mut hidden) =
            (ffn_in.clone(), scores_in.clone(), hidden_in.clone());
        let (gamma, beta) = (vec![1.0; h], vec![0.0; h]);
        let mut inv_sums = vec![0.0; m];
        let per_call = |f: &mut dyn FnMut()| time(2_000_000, f) * 1e3;
        let gelu = Epilogue {
            cols: ffn,
            bias: None,
            act: Activation::Gelu,
            residual: None,
            norm: None,
        };
        let norm = Epilogue {
            cols: h,
            bias: None,
            act: Activation::None,
            residual: None,
            norm: Some((&gamma, &beta, 1e-12, true)),
        };
        // SAFETY: the kernel runs on this machine (`available`).
        let gelu_ms = per_call(&mut || unsafe {
            ffn_rows.copy_from_slice(&ffn_in);
            (kern.ops.epilogue)(&mut ffn_rows, &gelu)
        });
        let softmax_ms = per_call(&mut || unsafe {
            scores.copy_from_slice(&scores_in);
            (kern.ops.softmax)(&mut scores, m, 0.17, &mut inv_sums)
        });
        let norm_ms = per_call(&mut || unsafe {
            hidden.copy_from_slice(&hidden_in);
            (kern.ops.epilogue)(&mut hidden, &norm)
        });
        let copy_ms = per_call(&mut || ffn_rows.copy_from_slice(&ffn_in));
        println!(
            "{:>16} GELU {m}x{ffn} {gelu_ms:.3} ms, softmax {m}x{m} {softmax_ms:.3} ms, \
             LayerNorm {m}x{h} {norm_ms:.3} ms (copying {m}x{ffn} {copy_ms:.3} ms); \
             per forward (6 layers): {:.2} ms",
            kern.name,
            6.0 * (gelu_ms + heads as f64 * softmax_ms + 2.0 * norm_ms)
        );
    }
    // Attention of one layer (12 heads of 32 at 128 tokens): packing, both GEMMs, softmax.
    for kern in available() {
        let (l, heads, d) = (128, 12, 32);
        let qkv: Vec<f32> = (0..l * 3 * heads * d)
            .map(|i| ((i * 31) % 97) as f32 * 0.04 - 2.0)
            .collect();
        let mut out = vec![0.0; l * heads * d];
        let scratch = AttentionScratch::default();
        let ms = time(4 * l * l * heads * d, || {
            let shape = Shape {
                seq_len: l,
                heads,
                head_dim: d,
                scale: 1.0 / (d as f32).sqrt(),
            };
            attention(
                kern,
                &qkv,
                &mut out,
                &[l],
                shape,
                Default::default(),
                &scratch,
            )
        }) * 1e3;
        println!(
            "{:>16} attention {l} tokens x {heads} heads of {d}: {ms:.3} ms per layer, {:.2} ms per forward (6 layers)",
            kern.name,
            6.0 * ms
        );
    }
}
