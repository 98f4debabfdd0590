//! f32 arrays whose every value is exactly an IEEE half (weights read from fp16 files) kept in a
//! packed-model image as two bytes per value: half the bytes, widened back bit for bit.
//! Branch-free loops that vectorize: a half's bits shifted into an f32's, scaled by 2^112.

/// 2^112: from a half's exponent bias (15) to an f32's (127).
const SCALE_UP: f32 = f32::from_bits((127 + 112) << 23);
const SCALE_DOWN: f32 = f32::from_bits((127 - 112) << 23);

/// The half with `x`'s value when there is one (any other `x` gives a half that widens to
/// another value).
#[inline(always)]
fn narrow(x: f32) -> u16 {
    let sign = (x.to_bits() >> 16) & 0x8000;
    let magnitude = ((x.abs() * SCALE_DOWN).to_bits() >> 13) & 0x7fff;
    (sign | magnitude) as u16
}

/// A half's value (finite halves; infinities and NaNs, never written, widen to finite values).
#[inline(always)]
fn widen(h: u16) -> f32 {
    let h = h as u32;
    let magnitude = f32::from_bits((h & 0x7fff) << 13) * SCALE_UP;
    f32::from_bits(magnitude.to_bits() | ((h & 0x8000) << 16))
}

/// Whether every value of `data` is a finite half.
pub(super) fn all_exact(data: &[f32]) -> bool {
    data.chunks(1024).all(|chunk| {
        chunk.iter().fold(true, |ok, &x| {
            ok & (widen(narrow(x)).to_bits() == x.to_bits())
        })
    })
}

/// `data` (every value a half: [`all_exact`]) as little-endian halves into `out`, two bytes a
/// value.
pub(super) fn encode(data: &[f32], out: &mut [u8]) {
    for (o, &x) in out.chunks_exact_mut(2).zip(data) {
        o.copy_from_slice(&narrow(x).to_le_bytes());
    }
}

/// Little-endian halves `bytes` widened into `out`, one value per two bytes.
pub(super) fn decode(bytes: &[u8], out: &mut [f32]) {
    for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = widen(u16::from_le_bytes([b[0], b[1]]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn every_finite_half_round_trips_bit_for_bit() {
        let finite: Vec<u16> = (0..=u16::MAX).filter(|&h| (h & 0x7c00) != 0x7c00).collect();
        let values: Vec<f32> = finite.iter().map(|&h| f16::from_bits(h).to_f32()).collect();
        for (&h, &x) in finite.iter().zip(&values) {
            assert_eq!(widen(h).to_bits(), x.to_bits(), "half {h:#06x}");
            assert_eq!(narrow(x), h, "{x:e}");
        }
        assert!(all_exact(&values));
        let mut bytes = vec![0u8; 2 * values.len()];
        encode(&values, &mut bytes);
        let mut back = vec![f32::NAN; values.len()];
        decode(&bytes, &mut back);
        assert!(back
            .iter()
            .zip(&values)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        assert_eq!(&bytes[2..4], &finite[1].to_le_bytes());
    }

    #[test]
    fn values_that_are_no_half_are_found() {
        let half = 0.333_251_95f32; // f16's 0x3555
        assert!(all_exact(&[
            half,
            -half,
            0.0,
            -0.0,
            65504.0,
            5.960_464_5e-8
        ]));
        for odd in [
            0.1f32,               // more mantissa than a half
            65520.0,              // past the largest half
            2.980_232_2e-8,       // half the smallest subnormal half
            5.960_464_5e-8 * 1.5, // between subnormal halves
            f32::INFINITY,        // never written as a half
            f32::NAN,
            f32::from_bits(half.to_bits() | 1), // one bit below the half's last
        ] {
            let mut data = vec![half; 3000];
            data[2500] = odd;
            assert!(!all_exact(&data), "{odd:e}");
        }
    }
}
