//! Rotary positions on the CPU: pairs of each head's dimensions turned by the angles of the
//! token's position, in place on the fused `[q | k | v]` rows (see `Op::Rotary`).

use crate::model::plan::Rotation;

/// Turns every row of `qkv` (`3 · heads · head_dim` wide) by `table`'s row `r % period`
/// (`period`: the sequence length for a table of positions, the rows for one row per token).
pub fn rotate(qkv: &mut [f32], period: usize, r: &Rotation, table: &[f32]) {
    let (h, half) = (r.heads * r.head_dim, r.dim / 2);
    for (row, x) in qkv.chunks_exact_mut(3 * h).enumerate() {
        let angles = &table[(row % period) * r.dim..][..r.dim];
        let (cos, sin) = angles.split_at(half);
        for head in x[..r.parts * h].chunks_exact_mut(r.head_dim) {
            for i in 0..half {
                let (a, b) = match r.interleaved {
                    true => (2 * i, 2 * i + 1),
                    false => (i, i + half),
                };
                let (xa, xb) = (head[a], head[b]);
                head[a] = xa * cos[i] - xb * sin[i];
                head[b] = xb * cos[i] + xa * sin[i];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::plan::WeightId;

    #[test]
    fn pairs_turn_by_their_angle() {
        // one head of 4 dimensions, two positions; position 1 turns pair 0 by 90°
        let table = [1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0];
        let rows = |x: [f32; 4]| [x, x, x].concat();
        let mut qkv = [rows([1.0, 2.0, 3.0, 4.0]), rows([1.0, 2.0, 3.0, 4.0])].concat();
        let r = Rotation {
            heads: 1,
            head_dim: 4,
            dim: 4,
            interleaved: true,
            parts: 2,
            table: WeightId(0),
            dynamic: None,
        };
        rotate(&mut qkv, 2, &r, &table);
        assert_eq!(&qkv[..12], &rows([1.0, 2.0, 3.0, 4.0])[..], "position 0");
        // interleaved: pair (0, 1) → (-2, 1); V (the third part) untouched
        assert_eq!(&qkv[12..20], &[-2.0, 1.0, 3.0, 4.0, -2.0, 1.0, 3.0, 4.0]);
        assert_eq!(&qkv[20..], &[1.0, 2.0, 3.0, 4.0]);
        let mut half = rows([1.0, 2.0, 3.0, 4.0]).to_vec();
        let r = Rotation {
            interleaved: false,
            parts: 3,
            ..r
        };
        rotate(&mut half, 1, &r, &table[4..]);
        // rotate-half: pair (0, 2) → (-3, 1)
        assert_eq!(&half[..4], &[-3.0, 2.0, 1.0, 4.0]);
        assert_eq!(&half[8..], &[-3.0, 2.0, 1.0, 4.0], "V turned too");
    }
}
