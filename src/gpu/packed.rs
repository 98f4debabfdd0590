//! Low-bit GEMM weights as the GPU keeps them (the GEMMs in `shaders/gemm_q4.wgsl`,
//! `gemm_q8.wgsl` and `gemm_q8_int.wgsl` unpack them):
//!
//! - **q4** (`BlockQuant`, 2- or 4-bit codes): the `[n, k]` codes 8 per u32 (code `i` of a
//!   word in bits `4i..4i+4`, flat over the chunk's rows), f32 block scales `[n, blocks]`, and
//!   the block zero points 8 per u32 the same way. Dequantized in the GEMM exactly as at import,
//!   `(code − zp) · scale` in f32.
//! - **q8** (`ChannelQuant`): the codes 4 per u32, int8 ones offset by 128 (as are their zero
//!   points), so every code is a uint8 and `code − zp` is unchanged; per row of W (output column)
//!   its scale and zero point. In f32: `(code − zp) · scale`, as at import. With integer dot
//!   products: also each row's code sum, for the zero-point corrections of the exact int32 sums.

use crate::model::{BlockQuant, ChannelQuant, Quant, Tensor};
use std::ops::Range;

/// How a GEMM weight is stored on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packed {
    /// f32 or f16 values.
    None,
    Q4,
    /// q8 codes, dequantized to f32 in the GEMM.
    Q8,
    /// q8 codes, integer dot products with quantized activations.
    Q8Int,
}

/// The longest reduction whose exact int32 sum `Σ (qa − za)(qw − zw)` cannot overflow.
const MAX_INT_K: usize = (i32::MAX / (255 * 255)) as usize;

/// The form a GEMM weight of `k` columns takes: packed when it came quantized in a form the
/// shaders take (`k % 4 == 0`, q4 codes and integral zero points below 16), else `None`.
pub fn form(t: &Tensor, k: usize, q8_int: bool) -> Packed {
    if !k.is_multiple_of(4) {
        return Packed::None;
    }
    match t.quant.as_deref() {
        Some(Quant::Block(b)) if q4_fits(b) => Packed::Q4,
        Some(Quant::Channel(_)) if q8_int && k <= MAX_INT_K => Packed::Q8Int,
        Some(Quant::Channel(_)) => Packed::Q8,
        _ => Packed::None,
    }
}

fn q4_fits(b: &BlockQuant) -> bool {
    b.block > 0
        && b.codes.iter().all(|&c| c < 16)
        && (b.zero_points.iter()).all(|&z| z.fract() == 0.0 && (0.0..16.0).contains(&z))
}

impl Packed {
    /// Bytes per row of W (codes, scales, zero points), for splitting by rows.
    pub fn row_bytes(self, k: usize) -> u64 {
        match self {
            Packed::None => 4 * k as u64,
            Packed::Q4 => k.div_ceil(2) as u64 + 8,
            Packed::Q8 | Packed::Q8Int => k as u64 + 16,
        }
    }
}

/// The codes buffer and the aux buffers (bound after the GEMM's output) of rows `rows` of a
/// `[n, k]` weight.
pub fn pack(p: Packed, q: &Quant, k: usize, rows: Range<usize>) -> (Vec<u8>, Vec<Vec<u8>>) {
    match (p, q) {
        (Packed::Q4, Quant::Block(b)) => pack_q4(b, k, rows),
        (Packed::Q8 | Packed::Q8Int, Quant::Channel(c)) => pack_q8(c, k, rows, p == Packed::Q8Int),
        _ => unreachable!("`form` chose {p:?} for another kind of quantization"),
    }
}

/// Nibbles packed 8 per little-endian u32.
fn nibbles(values: impl ExactSizeIterator<Item = u8>) -> Vec<u8> {
    let mut words = vec![0u32; values.len().div_ceil(8)];
    for (i, v) in values.enumerate() {
        words[i / 8] |= (v as u32 & 15) << (4 * (i % 8));
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn pack_q4(b: &BlockQuant, k: usize, rows: Range<usize>) -> (Vec<u8>, Vec<Vec<u8>>) {
    let blocks = b.blocks(k);
    let codes = nibbles(b.codes[rows.start * k..rows.end * k].iter().copied());
    let per_block = rows.start * blocks..rows.end * blocks;
    let scales = b.scales[per_block.clone()]
        .iter()
        .flat_map(|s| s.to_le_bytes())
        .collect();
    let zps = nibbles(b.zero_points[per_block].iter().map(|&z| z as u8));
    (codes, vec![scales, zps])
}

fn pack_q8(c: &ChannelQuant, k: usize, rows: Range<usize>, int: bool) -> (Vec<u8>, Vec<Vec<u8>>) {
    let offset = if c.signed { 128 } else { 0 };
    let codes: Vec<u8> = c.codes[rows.start * k..rows.end * k]
        .iter()
        .map(|&x| if c.signed { x ^ 0x80 } else { x })
        .collect();
    let meta: Vec<u32> = (codes.chunks_exact(k).zip(rows))
        .flat_map(|(row, j)| {
            let zp = (c.zero_points[j] + offset) as u32;
            let scale = c.scales[j].to_bits();
            match int {
                true => vec![scale, zp, row.iter().map(|&x| x as u32).sum(), 0],
                false => vec![scale, (zp as f32).to_bits()],
            }
        })
        .collect();
    let meta = meta.iter().flat_map(|w| w.to_le_bytes()).collect();
    (codes, vec![meta])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nibbles_fill_words_from_the_low_bits() {
        let bytes = nibbles([1u8, 2, 3, 4, 5, 6, 7, 8, 15].into_iter());
        assert_eq!(bytes.len(), 8);
        assert_eq!(
            u32::from_le_bytes(bytes[..4].try_into().unwrap()),
            0x8765_4321
        );
        assert_eq!(u32::from_le_bytes(bytes[4..].try_into().unwrap()), 0xf);
    }

    #[test]
    fn int8_codes_and_zero_points_are_offset_into_uint8() {
        let c = ChannelQuant {
            signed: true,
            codes: vec![0x80, 0xff, 0, 0x7f, 1, 2, 3, 4],
            scales: vec![0.5, 0.25],
            zero_points: vec![-1, 0],
        };
        let (codes, aux) = pack_q8(&c, 4, 1..2, true);
        assert_eq!(codes, vec![129, 130, 131, 132]);
        let meta: Vec<u32> = (aux[0].chunks_exact(4))
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(meta, vec![0.25f32.to_bits(), 128, 129 + 130 + 131 + 132, 0]);
        let (codes, aux) = pack_q8(&c, 4, 0..1, false);
        assert_eq!(codes, vec![0, 127, 128, 255]); // −128, −1, 0, 127
        assert_eq!(aux[0][4..8], 127f32.to_le_bytes());
    }

    #[test]
    fn q4_needs_integral_zero_points_below_16() {
        let t = |zp: f32| Tensor {
            shape: vec![1, 4],
            data: vec![0.0; 4],
            quant: Some(Box::new(Quant::Block(BlockQuant {
                block: 4,
                codes: vec![0, 15, 3, 8],
                scales: vec![1.0],
                zero_points: vec![zp],
            }))),
        };
        assert_eq!(form(&t(8.0), 4, true), Packed::Q4);
        assert_eq!(form(&t(8.5), 4, true), Packed::None);
        assert_eq!(form(&t(8.0), 6, true), Packed::None);
    }
}
