//! Multi-head self-attention on the fused `[q | k | v]` rows of each sequence. Per head, the
//! keys and values are packed straight from the qkv buffer into GEMM panels (no transposed
//! copies of the activations); scores exist only for one (sequence, head) at a time, and only
//! for the real (unpadded) keys, so padding is masked by never being read.

use super::gemm::{gemm, gemm_shared, PackedB};
use super::pool::{self, SharedMut, MAX_WORKERS};
use super::tile::Kernel;
use std::sync::Mutex;

/// Per-worker scratch: (sequence, head) pairs run in parallel, one per task.
pub struct AttentionScratch(Vec<Mutex<HeadScratch>>);

impl Default for AttentionScratch {
    fn default() -> Self {
        AttentionScratch((0..MAX_WORKERS).map(|_| Mutex::default()).collect())
    }
}

#[derive(Default)]
struct HeadScratch {
    keys: PackedB,
    values: PackedB,
    scores: Vec<f32>,
    inv_sums: Vec<f32>,
    a_pack: Vec<f32>,
    /// DeBERTa's projected relative embeddings of this head, and their products with the
    /// queries (`c2p`) and keys (`p2c`).
    positions: PackedB,
    c2p: Vec<f32>,
    p2c: Vec<f32>,
}

/// The layout of one attention: rows per sequence, heads, and the scale of `q·k`.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub seq_len: usize,
    pub heads: usize,
    pub head_dim: usize,
    pub scale: f32,
}

/// A `[heads, 2 * center + 1]` table of what is added to the score of query `i` and key `j`
/// (entry `j - i + center`), as `model::DistanceTable` describes it.
#[derive(Debug, Clone, Copy)]
pub struct Bias<'a> {
    pub table: &'a [f32],
    pub center: usize,
}

/// DeBERTa's disentangled terms (`model::Disentangled`): `[rows, h]` relative embeddings
/// projected by the key (`pos_key`, content-to-position) and query (`pos_query`,
/// position-to-content) projections, and the row each distance `i - j` reads
/// (`index[i - j + center]`, f32-held).
#[derive(Debug, Clone, Copy)]
pub struct Relative<'a> {
    pub pos_key: Option<&'a [f32]>,
    pub pos_query: Option<&'a [f32]>,
    pub index: &'a [f32],
    pub center: usize,
}

/// What attention adds to `q·k` beside the content: DeBERTa's terms (scaled with it), then a
/// distance bias (after the scale).
#[derive(Debug, Clone, Copy, Default)]
pub struct Terms<'a> {
    pub bias: Option<Bias<'a>>,
    pub relative: Option<Relative<'a>>,
    /// A sliding window: query `i` sees keys with `|i - j| <= window` only.
    pub window: Option<usize>,
}

/// Query rows whose scores exist at once: scratch is `QUERY_BLOCK` rows of scores per
/// worker, whatever the sequence's length.
pub const QUERY_BLOCK: usize = 64;

/// Bytes of attention scratch one worker may hold for sequences of `seq_len` tokens, heads
/// of `head_dim` (scores of one query block; keys, values and their packing).
pub fn scratch_bytes(seq_len: usize, head_dim: usize) -> u64 {
    let scores = QUERY_BLOCK.min(seq_len) as u64 * seq_len as u64;
    let panels = 2 * (seq_len as u64 + 32) * head_dim as u64;
    4 * (scores + panels + QUERY_BLOCK as u64 * head_dim as u64 + seq_len as u64)
}

/// `qkv`: `[b*l, 3h]`; `out`: `[b*l, h]`; `lens[s]`: real tokens of sequence `s`. Queries
/// run in blocks of [`QUERY_BLOCK`] rows; with a `window`, a block packs and scores only
/// the keys some of its queries see.
pub fn attention(
    kern: &Kernel,
    qkv: &[f32],
    out: &mut [f32],
    lens: &[usize],
    shape: Shape,
    terms: Terms,
    scratch: &AttentionScratch,
) {
    let Terms {
        bias,
        relative,
        window,
    } = terms;
    let Shape {
        seq_len,
        heads,
        head_dim,
        scale,
    } = shape;
    let h = heads * head_dim;
    let ld = 3 * h;
    let width = bias.map_or(0, |b| 2 * b.center + 1);
    assert!(bias.is_none_or(|b| b.table.len() >= heads * width && b.center + 1 >= seq_len));
    assert!(qkv.len() >= lens.len() * seq_len * ld && out.len() >= lens.len() * seq_len * h);
    let out = SharedMut(out.as_mut_ptr());
    pool::run(lens.len() * heads, &|task, worker| {
        let (seq, head) = (task / heads, task % heads);
        let len = lens[seq];
        let rows = &qkv[seq * seq_len * ld..(seq + 1) * seq_len * ld];
        // This task's output: columns q..q + head_dim of the sequence's rows.
        let q = head * head_dim;
        let out_at = |r: usize| {
            // SAFETY: row r < seq_len of this sequence is inside `out` by the assert; the
            // columns belong to this (sequence, head) alone.
            unsafe {
                std::slice::from_raw_parts_mut(out.get().add((seq * seq_len + r) * h + q), head_dim)
            }
        };
        let mut guard = scratch.0[worker].lock().unwrap_or_else(|e| e.into_inner());
        let s = &mut *guard;
        let (k, v) = (h + q, 2 * h + q);
        let mut packed: Option<(usize, usize)> = None;
        for r0 in (0..seq_len).step_by(QUERY_BLOCK) {
            let r1 = (r0 + QUERY_BLOCK).min(seq_len);
            // The keys some query of the block sees.
            let (lo, hi) = match window {
                Some(w) => (r0.saturating_sub(w).min(len), (r1 - 1 + w + 1).min(len)),
                None => (0, len),
            };
            if lo >= hi {
                (r0..r1).for_each(|r| out_at(r).fill(0.0));
                continue;
            }
            let keys = hi - lo;
            if packed != Some((lo, hi)) {
                s.keys
                    .repack_nk(kern, keys, head_dim, &rows[lo * ld + k..], ld);
                s.values
                    .repack_kn(kern, head_dim, keys, &rows[lo * ld + v..], ld);
                packed = Some((lo, hi));
            }
            let m = r1 - r0;
            s.scores.resize(m * keys, 0.0);
            s.inv_sums.resize(m, 0.0);
            let a = &rows[r0 * ld + q..];
            gemm(
                kern,
                m,
                a,
                ld,
                &s.keys,
                &mut s.scores,
                keys,
                false,
                &mut s.a_pack,
            );
            if let Some(rel) = relative {
                let block = Block { r0, r1, lo, hi };
                add_relative(kern, s, rows, block, ld, (q, h + q, head_dim), &rel);
            }
            let scale = match bias {
                // Scaled, then biased, as the references add the bias: softmax gets scale 1.
                Some(b) => {
                    let table = &b.table[head * width..(head + 1) * width];
                    for (i, row) in s.scores.chunks_exact_mut(keys).enumerate() {
                        let at = b.center - (r0 + i) + lo;
                        row.iter_mut()
                            .zip(&table[at..at + keys])
                            .for_each(|(x, t)| *x = *x * scale + t);
                    }
                    1.0
                }
                None => scale,
            };
            if let Some(w) = window {
                // Corners of the block outside the window: far below any score, finite so
                // that a padding row with no key in reach gets no NaN.
                for (i, row) in s.scores.chunks_exact_mut(keys).enumerate() {
                    let r = r0 + i;
                    for (j, x) in row.iter_mut().enumerate() {
                        if (lo + j).abs_diff(r) > w {
                            *x = -1.0e30;
                        }
                    }
                }
            }
            // SAFETY: `ops` belongs to `kern`, which was checked to run on this CPU.
            unsafe { (kern.ops.softmax)(&mut s.scores, keys, scale, &mut s.inv_sums) };
            let first = SharedMut(out.get().wrapping_add((seq * seq_len + r0) * h + q));
            let c_len = (m - 1) * h + head_dim;
            // SAFETY: the m rows of head_dim columns from `first` are this task's alone.
            unsafe {
                gemm_shared(
                    kern,
                    m,
                    &s.scores,
                    keys,
                    &s.values,
                    (first, c_len),
                    h,
                    false,
                    &mut s.a_pack,
                )
            };
            for (i, inv) in s.inv_sums.iter().enumerate() {
                out_at(r0 + i).iter_mut().for_each(|x| *x *= inv);
            }
        }
    });
}

/// The query rows `r0..r1` and key rows `lo..hi` of one block of scores.
#[derive(Debug, Clone, Copy)]
struct Block {
    r0: usize,
    r1: usize,
    lo: usize,
    hi: usize,
}

/// Adds DeBERTa's `q_i · pos_key[r] + k_j · pos_query[r]` to each score of one block of a
/// (sequence, head), `r` the row of distance `i - j`: both products as GEMMs over the rows
/// that the block's distances reach (the index rises with the distance), then gathered.
/// `cols`: the head's query and key columns in the `ld`-wide rows, and its width.
fn add_relative(
    kern: &Kernel,
    s: &mut HeadScratch,
    rows: &[f32],
    block: Block,
    ld: usize,
    cols: (usize, usize, usize),
    rel: &Relative,
) {
    let (q, k, d) = cols;
    let Block { r0, r1, lo, hi } = block;
    let hidden = ld / 3;
    let (m, keys) = (r1 - r0, hi - lo);
    let first = rel.index[rel.center + r0 + 1 - hi] as usize;
    let n = rel.index[rel.center + r1 - 1 - lo] as usize + 1 - first;
    let HeadScratch {
        scores,
        positions,
        c2p,
        p2c,
        a_pack,
        ..
    } = s;
    if let Some(pk) = rel.pos_key {
        positions.repack_nk(kern, n, d, &pk[first * hidden + q..], hidden);
        c2p.resize(m * n, 0.0);
        let a = &rows[r0 * ld + q..];
        gemm(kern, m, a, ld, positions, c2p, n, false, a_pack);
    }
    if let Some(pq) = rel.pos_query {
        positions.repack_nk(kern, n, d, &pq[first * hidden + q..], hidden);
        p2c.resize(keys * n, 0.0);
        let a = &rows[lo * ld + k..];
        gemm(kern, keys, a, ld, positions, p2c, n, false, a_pack);
    }
    for (i, row) in scores.chunks_exact_mut(keys).enumerate() {
        for (j, score) in row.iter_mut().enumerate() {
            let r = rel.index[rel.center + r0 + i - (lo + j)] as usize - first;
            if rel.pos_key.is_some() {
                *score += c2p[i * n + r];
            }
            if rel.pos_query.is_some() {
                *score += p2c[j * n + r];
            }
        }
    }
}
