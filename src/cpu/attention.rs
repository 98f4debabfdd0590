//! Multi-head self-attention on the fused `[q | k | v]` rows of each sequence. Per head, the
//! keys and values are packed straight from the qkv buffer into GEMM panels (no transposed
//! copies of the activations); scores exist only for one (sequence, head) at a time, and only
//! for the real (unpadded) keys, so padding is masked by never being read.

use super::gemm::{gemm, PackedB};
use super::kernels::Kernel;

#[derive(Default)]
pub struct AttentionScratch {
    keys: PackedB,
    values: PackedB,
    scores: Vec<f32>,
    inv_sums: Vec<f32>,
    a_pack: Vec<f32>,
}

/// `qkv`: `[b*l, 3h]`; `out`: `[b*l, h]`; `lens[s]`: real tokens of sequence `s`.
#[allow(clippy::too_many_arguments)]
pub fn attention(
    kern: &Kernel,
    qkv: &[f32],
    out: &mut [f32],
    lens: &[usize],
    seq_len: usize,
    heads: usize,
    head_dim: usize,
    s: &mut AttentionScratch,
) {
    let h = heads * head_dim;
    let ld = 3 * h;
    let scale = 1.0 / (head_dim as f32).sqrt();
    for (seq, &len) in lens.iter().enumerate() {
        let rows = &qkv[seq * seq_len * ld..(seq + 1) * seq_len * ld];
        let out_rows = &mut out[seq * seq_len * h..(seq + 1) * seq_len * h];
        if len == 0 {
            out_rows.fill(0.0);
            continue;
        }
        for head in 0..heads {
            let q = head * head_dim;
            let (k, v) = (h + q, 2 * h + q);
            s.keys.repack_nk(kern, len, head_dim, &rows[k..], ld);
            s.values.repack_kn(kern, head_dim, len, &rows[v..], ld);
            s.scores.resize(seq_len * len, 0.0);
            s.inv_sums.resize(seq_len, 0.0);
            gemm(
                kern,
                seq_len,
                &rows[q..],
                ld,
                &s.keys,
                &mut s.scores,
                len,
                false,
                &mut s.a_pack,
            );
            // SAFETY: `ops` belongs to `kern`, which was checked to run on this CPU.
            unsafe { (kern.ops.softmax)(&mut s.scores, len, scale, &mut s.inv_sums) };
            gemm(
                kern,
                seq_len,
                &s.scores,
                len,
                &s.values,
                &mut out_rows[q..],
                h,
                false,
                &mut s.a_pack,
            );
            for (row, inv) in out_rows.chunks_exact_mut(h).zip(&s.inv_sums) {
                for x in &mut row[q..q + head_dim] {
                    *x *= inv;
                }
            }
        }
    }
}
