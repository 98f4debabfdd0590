//! Tensors of at most 256 distinct values (an embedding table dequantized from 8-bit codes with
//! one scale) kept in a packed-model image as one byte per value and the values once: a quarter
//! of the bytes, decoded back bit for bit.

const SLOTS: usize = 1024; // a power of two, well over twice 256

/// The distinct values of a tensor, by bit pattern, in order of first appearance, with a small
/// open-addressing table from bits to code.
pub(super) struct Palette {
    values: Vec<f32>,
    keys: Vec<u32>,
    codes: Vec<Option<u8>>,
}

impl Palette {
    /// `data`'s palette, or `None` when it has more than 256 distinct values.
    pub(super) fn of(data: &[f32]) -> Option<Palette> {
        let mut p = Palette {
            values: Vec::new(),
            keys: vec![0; SLOTS],
            codes: vec![None; SLOTS],
        };
        for &x in data {
            let slot = p.slot(x.to_bits());
            if p.codes[slot].is_none() {
                if p.values.len() == 256 {
                    return None;
                }
                (p.keys[slot], p.codes[slot]) = (x.to_bits(), Some(p.values.len() as u8));
                p.values.push(x);
            }
        }
        Some(p)
    }

    /// The slot of `bits`: its own, or the empty one where it would go.
    fn slot(&self, bits: u32) -> usize {
        let mut s = (bits.wrapping_mul(0x9e37_79b1) >> 22) as usize;
        while self.codes[s].is_some() && self.keys[s] != bits {
            s = (s + 1) & (SLOTS - 1);
        }
        s
    }

    pub(super) fn values(&self) -> &[f32] {
        &self.values
    }

    /// The codes of `data` (every value of which is in the palette) into `out`.
    pub(super) fn encode(&self, data: &[f32], out: &mut [u8]) {
        for (o, &x) in out.iter_mut().zip(data) {
            *o = self.codes[self.slot(x.to_bits())].expect("a value of the palette");
        }
    }
}

/// `codes` looked up in `values` into `out`; false when a code is past the palette.
pub(super) fn decode(values: &[f32], codes: &[u8], out: &mut [f32]) -> bool {
    if codes.iter().any(|&c| c as usize >= values.len()) {
        return false;
    }
    for (o, &c) in out.iter_mut().zip(codes) {
        *o = values[c as usize];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_bit_for_bit_and_bad_codes_are_refused() {
        // 256 distinct values with -0.0 and 0.0 apart, and NaN, repeated in a scrambled order.
        let mut values: Vec<f32> = (0..254).map(|i| (i as f32 - 127.0) * 0.013).collect();
        values.extend([-0.0, f32::NAN]);
        let data: Vec<f32> = (0..10_000).map(|i| values[(i * 7919) % 256]).collect();
        let p = Palette::of(&data).expect("256 values fit");
        assert_eq!(p.values().len(), 256);
        let mut codes = vec![0u8; data.len()];
        p.encode(&data, &mut codes);
        let mut back = vec![0f32; data.len()];
        assert!(decode(p.values(), &codes, &mut back));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&data));
        assert!(
            !decode(&p.values()[..10], &codes, &mut back),
            "a code past the palette"
        );
        let more: Vec<f32> = (0..257).map(|i| i as f32).collect();
        assert!(Palette::of(&more).is_none());
    }
}
