//! Position terms computed once on the host, in the reference implementations' own float
//! arithmetic (so that a bucket boundary never moves by an ulp), and read by both executors:
//! `[heads, 2L - 1]` distance tables (entry `h, j - i + L - 1` is added to the attention
//! score of query `i` and key `j`) and DeBERTa's relative-embedding index per distance.

/// MPNet's (T5's bidirectional) bucket of `relative = key - query`: half the buckets per
/// direction, exact below a quarter of them, log-spaced up to `max_distance`; the float steps
/// are f32 as in `MPNetEncoder.relative_position_bucket`.
pub fn relative_bucket(relative: i64, buckets: usize, max_distance: usize) -> usize {
    let n = -relative;
    let half = (buckets / 2) as i64;
    let mut bucket = if n < 0 { half } else { 0 };
    let n = n.abs();
    let max_exact = half / 2;
    if n < max_exact {
        return (bucket + n) as usize;
    }
    let log_ratio = ((max_distance as f64) / (max_exact as f64)).ln() as f32;
    let scaled = (n as f32 / max_exact as f32).ln() / log_ratio * (half - max_exact) as f32;
    bucket += (max_exact + scaled as i64).min(half - 1);
    bucket as usize
}

/// DeBERTa-v2's relative position of `relative = query - key`: exact within half the
/// buckets, log-spaced beyond up to `max_position` (`make_log_bucket_position`, its float
/// steps f32 as torch takes them); unbucketed where `buckets` is 0.
pub fn log_bucket(relative: i64, buckets: usize, max_position: usize) -> i64 {
    if buckets == 0 || max_position == 0 {
        return relative;
    }
    let mid = (buckets / 2) as i64;
    let abs = if relative < mid && relative > -mid {
        mid - 1
    } else {
        relative.abs()
    };
    if abs <= mid {
        return relative;
    }
    let denom = (((max_position - 1) as f64 / mid as f64) as f32).ln();
    let log_pos = ((abs as f32 / mid as f32).ln() / denom * (mid - 1) as f32).ceil() + mid as f32;
    log_pos as i64 * relative.signum()
}

/// DeBERTa's index into its `2 * span` projected relative embeddings for every distance
/// `query - key` of a sequence of up to `len` tokens (entry `query - key + len - 1`): the
/// bucket clamped into the table. Content-to-position and position-to-content read the same
/// entry (`-bucket(key - query) == bucket(query - key)`).
pub fn disentangled_index(
    len: usize,
    buckets: usize,
    max_position: usize,
    span: usize,
) -> Vec<f32> {
    let top = 2 * span as i64 - 1;
    (0..2 * len - 1)
        .map(|d| {
            let bucket = log_bucket(d as i64 - (len as i64 - 1), buckets, max_position);
            (bucket + span as i64).clamp(0, top) as f32
        })
        .collect()
}

/// LayerNorm of one row (host-side tables only; the executors have their own).
pub fn layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *x = (*x - mean) * inv * g + b;
    }
}

/// `x · wᵀ + bias` for the rows of `x` by a PyTorch `[out, in]` matrix `w` (`in` = `n_in`).
/// Eight rows of `x` at a time meet each row of `w`, so `w` streams from memory once per
/// eight rows (DeBERTa-v3-base projects 512 rows by 24 such matrices at load).
pub fn project_rows(x: &[f32], w: &[f32], bias: &[f32], n_in: usize) -> Vec<f32> {
    let n_out = bias.len();
    let mut out = vec![0.0; x.len() / n_in * n_out];
    for (xs, outs) in x.chunks(8 * n_in).zip(out.chunks_mut(8 * n_out)) {
        for (o, (col, b)) in w.chunks_exact(n_in).zip(bias).enumerate() {
            for (r, row) in xs.chunks_exact(n_in).enumerate() {
                outs[r * n_out + o] = dot(row, col) + b;
            }
        }
    }
    out
}

/// Eight independent sums, so that the loop vectorises.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = (ca.remainder().iter().zip(cb.remainder()))
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// The distance table of a learned `[buckets, heads]` relative bias (`weights`, row-major).
pub fn relative_bias_table(
    weights: &[f32],
    heads: usize,
    buckets: usize,
    max_distance: usize,
    len: usize,
) -> Vec<f32> {
    let width = 2 * len - 1;
    let mut out = vec![0.0; heads * width];
    for d in 0..width {
        let b = relative_bucket(d as i64 - (len as i64 - 1), buckets, max_distance);
        for h in 0..heads {
            out[h * width + d] = weights[b * heads + h];
        }
    }
    out
}

/// ALiBi's head slopes for any head count (the paper's, as Jina's `_get_alibi_head_slopes`:
/// a geometric series for a power of two, else the nearest lower power's series followed by
/// every other slope of the next power's), computed in f64 and rounded to f32.
pub fn alibi_slopes(heads: usize) -> Vec<f32> {
    fn power_of_two(n: usize) -> Vec<f64> {
        let start = 2f64.powf(-(2f64.powf(-((n as f64).log2() - 3.0))));
        (0..n).map(|i| start * start.powf(i as f64)).collect()
    }
    fn slopes(n: usize) -> Vec<f64> {
        if n.is_power_of_two() {
            return power_of_two(n);
        }
        let closest = 1usize << n.ilog2();
        let mut s = power_of_two(closest);
        s.extend(slopes(2 * closest).into_iter().step_by(2).take(n - closest));
        s
    }
    if heads == 0 {
        return Vec::new();
    }
    slopes(heads).into_iter().map(|s| s as f32).collect()
}

/// The distance table of symmetric ALiBi: `-slope_h · |j - i|` (f32, as the reference
/// multiplies the negated f32 slopes by the distances).
pub fn alibi_table(heads: usize, len: usize) -> Vec<f32> {
    let width = 2 * len - 1;
    let mut out = Vec::with_capacity(heads * width);
    for slope in alibi_slopes(heads) {
        out.extend((0..width).map(|d| -slope * (d as i64 - (len as i64 - 1)).abs() as f32));
    }
    out
}

/// Rotary angles' cosines and sines for positions `0..len`: row `p` holds `cos(p·θ_i)` for
/// `i < dim/2`, then `sin(p·θ_i)`, with `θ_i = theta^(-2i/dim)`. Computed in f64 and rounded
/// once, as RoFormer's numpy table is (`p / theta^(2i/dim)`).
pub fn rotary_table(len: usize, dim: usize, theta: f64, position_scale: f64) -> Vec<f32> {
    let half = dim / 2;
    let mut out = Vec::with_capacity(len * dim);
    for p in 0..len {
        let p = p as f64 * position_scale;
        let angle = |i: usize| p / theta.powf((2 * i) as f64 / dim as f64);
        out.extend((0..half).map(|i| angle(i).cos() as f32));
        out.extend((0..half).map(|i| angle(i).sin() as f32));
    }
    out
}

/// The base a sequence of `len` tokens turns by under dynamic NTK scaling (`len > trained`).
pub fn dynamic_theta(theta: f64, dim: usize, factor: f64, trained: usize, len: usize) -> f64 {
    let stretch = factor * len as f64 / trained as f64 - (factor - 1.0);
    theta * stretch.powf(dim as f64 / (dim as f64 - 2.0))
}

/// One row of angles per token row of a batch (`seq_len` rows per sequence): each sequence
/// turns by its own length's base, so a text's result does not depend on its batch; padding
/// rows do not turn.
pub fn dynamic_rows(
    lens: &[usize],
    seq_len: usize,
    dim: usize,
    theta: f64,
    position_scale: f64,
    (trained, factor): (usize, f64),
) -> Vec<f32> {
    let identity: Vec<f32> = [vec![1.0; dim / 2], vec![0.0; dim / 2]].concat();
    let plain = rotary_table(trained.min(seq_len), dim, theta, position_scale);
    let mut out = Vec::with_capacity(lens.len() * seq_len * dim);
    for &n in lens {
        let n = n.min(seq_len);
        match n > trained {
            true => {
                let base = dynamic_theta(theta, dim, factor, trained, n);
                out.extend(rotary_table(n, dim, base, position_scale));
            }
            false => out.extend_from_slice(&plain[..n * dim]),
        }
        for _ in n..seq_len {
            out.extend_from_slice(&identity);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_rows_scale_only_sequences_past_the_trained_length() {
        let (dim, theta) = (8, 1000.0);
        let rows = dynamic_rows(&[3, 6], 6, dim, theta, 1.0, (4, 2.0));
        assert_eq!(rows.len(), 2 * 6 * dim);
        let plain = rotary_table(6, dim, theta, 1.0);
        assert_eq!(
            &rows[..3 * dim],
            &plain[..3 * dim],
            "3 ≤ 4 tokens: the plain base"
        );
        assert_eq!(
            &rows[3 * dim..4 * dim],
            &[1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
        );
        // 6 tokens: base 1000 · (2 · 6/4 − 1)^(8/6) = 1000 · 2^(4/3)
        let scaled = rotary_table(6, dim, 1000.0 * 2f64.powf(4.0 / 3.0), 1.0);
        assert_eq!(&rows[6 * dim..], &scaled[..]);
        assert_ne!(scaled, plain);
    }

    #[test]
    fn rotary_angles_turn_by_position() {
        let t = rotary_table(3, 4, 10000.0, 1.0);
        // position 0: no turn
        assert_eq!(&t[..4], &[1.0, 1.0, 0.0, 0.0]);
        // position 2: angles 2 and 2/100
        let want = [2f64.cos(), 0.02f64.cos(), 2f64.sin(), 0.02f64.sin()];
        for (g, w) in t[8..].iter().zip(want) {
            assert_eq!(*g, w as f32);
        }
    }

    #[test]
    fn buckets_are_exact_near_and_logarithmic_far() {
        // Distance 0 and the exact range; keys after the query take the upper half.
        assert_eq!(relative_bucket(0, 32, 128), 0);
        assert_eq!(relative_bucket(-7, 32, 128), 7);
        assert_eq!(relative_bucket(7, 32, 128), 23);
        // Far distances share the last bucket of their direction.
        assert_eq!(relative_bucket(-10_000, 32, 128), 15);
        assert_eq!(relative_bucket(10_000, 32, 128), 31);
    }

    #[test]
    fn alibi_slopes_follow_the_paper() {
        let s = alibi_slopes(8);
        let want: Vec<f32> = (1..=8).map(|i| 2f32.powi(-i)).collect();
        assert_eq!(s, want);
        // 6 heads: the 4-head series, then every other slope of the 8-head one.
        let s6 = alibi_slopes(6);
        assert_eq!(&s6[..4], &alibi_slopes(4)[..]);
        assert_eq!(s6[4..], [s[0], s[2]]);
    }

    /// PyTorch's own tables (scripts/make_tiny_families.py): every bucket over distances
    /// -2100..=2100, and the slopes for 1..=40 heads, bit for bit.
    #[test]
    fn positions_equal_the_reference_tables() {
        let g: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/golden/positions.json")).unwrap();
        let lo = g["relative_position_range"][0].as_i64().unwrap();
        let m = &g["mpnet_buckets"];
        let (buckets, max) = (
            m["num_buckets"].as_u64().unwrap(),
            m["max_distance"].as_u64(),
        );
        let want = m["buckets"].as_array().unwrap();
        assert_eq!(want.len(), 4201);
        for (i, w) in want.iter().enumerate() {
            let rel = lo + i as i64;
            let got = relative_bucket(rel, buckets as usize, max.unwrap() as usize);
            assert_eq!(got as u64, w.as_u64().unwrap(), "distance {rel}");
        }
        for table in g["deberta_buckets"].as_array().unwrap() {
            let size = table["bucket_size"].as_u64().unwrap() as usize;
            let max = table["max_position"].as_u64().unwrap() as usize;
            for (i, w) in table["buckets"].as_array().unwrap().iter().enumerate() {
                let rel = lo + i as i64;
                let got = log_bucket(rel, size, max);
                assert_eq!(got, w.as_i64().unwrap(), "distance {rel}, {size} buckets");
                assert_eq!(-log_bucket(-rel, size, max), got, "odd in the distance");
            }
        }
        for (n, want) in g["alibi_slopes"].as_object().unwrap() {
            let want: Vec<f32> = (want.as_array().unwrap().iter())
                .map(|v| v.as_f64().unwrap() as f32)
                .collect();
            assert_eq!(alibi_slopes(n.parse().unwrap()), want, "{n} heads");
        }
    }
}
