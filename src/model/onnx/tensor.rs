//! Decoding `TensorProto` payloads (to f32 or kept integers, packed bits unpacked) and the
//! elementwise arithmetic of numpy broadcasting. Errors are plain reasons; the caller attaches
//! the tensor or node name.

use super::proto::{dtype, TensorProto};
use std::borrow::Cow;

pub(super) type Reason = String;

pub(super) fn is_float(data_type: i32) -> bool {
    matches!(data_type, dtype::FLOAT | dtype::FLOAT16 | dtype::BFLOAT16)
}

pub(super) fn is_int(data_type: i32) -> bool {
    matches!(
        data_type,
        dtype::UINT8
            | dtype::INT8
            | dtype::UINT16
            | dtype::INT16
            | dtype::INT32
            | dtype::UINT4
            | dtype::INT4
    )
}

pub(super) fn shape(t: &TensorProto) -> Result<Vec<usize>, Reason> {
    t.dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("negative dimension {d}")))
        .collect()
}

pub(super) fn numel(shape: &[usize]) -> Result<usize, Reason> {
    shape.iter().try_fold(1usize, |n, &d| {
        n.checked_mul(d)
            .ok_or_else(|| format!("shape {shape:?} overflows"))
    })
}

pub(super) fn len_mismatch(what: &str, got: usize, want: usize) -> Reason {
    format!("{what} holds {got} values, shape needs {want}")
}

/// Raw little-endian payload of exactly `n` elements of `size` bytes.
fn raw(t: &TensorProto, n: usize, size: usize) -> Result<&[u8], Reason> {
    let want = n.checked_mul(size).ok_or("tensor size overflows")?;
    if t.raw_data.len() != want {
        return Err(format!(
            "raw_data has {} bytes, shape needs {want}",
            t.raw_data.len()
        ));
    }
    Ok(&t.raw_data)
}

/// Float tensor (f32, f16 or bf16) as f32.
pub(super) fn to_f32(t: &TensorProto) -> Result<Vec<f32>, Reason> {
    let n = numel(&shape(t)?)?;
    let bits16 = |conv: fn(u16) -> f32| -> Result<Vec<f32>, Reason> {
        if t.raw_data.is_empty() && n > 0 {
            // int32_data carries one 16-bit pattern per element.
            if t.int32_data.len() != n {
                return Err(len_mismatch("int32_data", t.int32_data.len(), n));
            }
            return Ok(t.int32_data.iter().map(|&v| conv(v as u16)).collect());
        }
        let raw = raw(t, n, 2)?;
        Ok(raw
            .chunks_exact(2)
            .map(|c| conv(u16::from_le_bytes([c[0], c[1]])))
            .collect())
    };
    match t.data_type {
        dtype::FLOAT if t.raw_data.is_empty() && n > 0 => {
            if t.float_data.len() != n {
                return Err(len_mismatch("float_data", t.float_data.len(), n));
            }
            Ok(t.float_data.clone())
        }
        dtype::FLOAT => Ok(raw(t, n, 4)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()),
        dtype::FLOAT16 => bits16(|b| half::f16::from_bits(b).to_f32()),
        dtype::BFLOAT16 => bits16(|b| half::bf16::from_bits(b).to_f32()),
        other => Err(format!("expected a float tensor, got data type {other}")),
    }
}

/// A small int64 tensor (shape operands: `Slice` bounds, `Split` sizes); other integer
/// types through [`to_i32`].
pub(super) fn to_i64(t: &TensorProto) -> Result<Vec<i64>, Reason> {
    if t.data_type != dtype::INT64 {
        return Ok(to_i32(t)?.into_iter().map(i64::from).collect());
    }
    let n = numel(&shape(t)?)?;
    if t.raw_data.is_empty() && n > 0 {
        if t.int64_data.len() != n {
            return Err(len_mismatch("int64_data", t.int64_data.len(), n));
        }
        return Ok(t.int64_data.clone());
    }
    Ok(raw(t, n, 8)?
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect())
}

/// The codes of an INT8 / UINT8 tensor stored as `raw_data` of the right length, as bytes.
pub(super) fn raw_8bit(t: &TensorProto) -> Option<&[u8]> {
    let n = numel(&shape(t).ok()?).ok()?;
    let eight = matches!(t.data_type, dtype::INT8 | dtype::UINT8);
    (eight && n > 0 && t.raw_data.len() == n).then_some(t.raw_data.as_slice())
}

/// Integer tensor (8/16/32-bit or packed 4-bit) as i32, one value per logical element.
pub(super) fn to_i32(t: &TensorProto) -> Result<Vec<i32>, Reason> {
    let n = numel(&shape(t)?)?;
    let nibbles = |bytes: &mut dyn Iterator<Item = u8>, signed: bool| -> Vec<i32> {
        let mut v: Vec<i32> = bytes
            .flat_map(|b| [b & 0x0f, b >> 4])
            .map(|q| {
                if signed {
                    ((q << 4) as i8 >> 4) as i32
                } else {
                    q as i32
                }
            })
            .collect();
        v.truncate(n);
        v
    };
    let packed4 = matches!(t.data_type, dtype::UINT4 | dtype::INT4);
    if t.raw_data.is_empty() && n > 0 {
        let want = if packed4 { n.div_ceil(2) } else { n };
        if t.int32_data.len() != want {
            return Err(len_mismatch("int32_data", t.int32_data.len(), want));
        }
        if packed4 {
            let mut it = t.int32_data.iter().map(|&v| v as u8);
            return Ok(nibbles(&mut it, t.data_type == dtype::INT4));
        }
        return match t.data_type {
            dtype::UINT8 | dtype::INT8 | dtype::UINT16 | dtype::INT16 | dtype::INT32 => {
                Ok(t.int32_data.clone())
            }
            other => Err(format!("expected an integer tensor, got data type {other}")),
        };
    }
    Ok(match t.data_type {
        dtype::UINT8 => raw(t, n, 1)?.iter().map(|&b| b as i32).collect(),
        dtype::INT8 => raw(t, n, 1)?.iter().map(|&b| b as i8 as i32).collect(),
        dtype::UINT16 => raw(t, n, 2)?
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]) as i32)
            .collect(),
        dtype::INT16 => raw(t, n, 2)?
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]) as i32)
            .collect(),
        dtype::INT32 => raw(t, n, 4)?
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        dtype::UINT4 | dtype::INT4 => {
            let raw = raw(t, n.div_ceil(2), 1)?;
            nibbles(&mut raw.iter().copied(), t.data_type == dtype::INT4)
        }
        other => return Err(format!("expected an integer tensor, got data type {other}")),
    })
}

/// Bytes of a uint8 tensor.
pub(super) fn to_u8(t: &TensorProto) -> Result<Cow<'_, [u8]>, Reason> {
    if t.data_type != dtype::UINT8 {
        return Err(format!(
            "expected uint8 data, got data type {}",
            t.data_type
        ));
    }
    let n = numel(&shape(t)?)?;
    if t.raw_data.is_empty() && n > 0 {
        if t.int32_data.len() != n {
            return Err(len_mismatch("int32_data", t.int32_data.len(), n));
        }
        return Ok(Cow::Owned(t.int32_data.iter().map(|&v| v as u8).collect()));
    }
    Ok(Cow::Borrowed(raw(t, n, 1)?))
}

/// Splits each byte into `8 / bits` values, lowest bits first.
pub(super) fn unpack_bits(bytes: &[u8], bits: usize) -> Result<Vec<i32>, Reason> {
    if !matches!(bits, 2 | 4 | 8) {
        return Err(format!("bits={bits} is not supported (2, 4 or 8)"));
    }
    let mask = ((1u16 << bits) - 1) as u8;
    let per_byte = 8 / bits;
    // (A `flat_map` has no exact length: collecting it grew the vector a push at a time.)
    let mut out = Vec::with_capacity(bytes.len() * per_byte);
    for &b in bytes {
        out.extend((0..per_byte).map(|i| ((b >> (i * bits)) & mask) as i32));
    }
    Ok(out)
}

fn pad_rank(s: &[usize], rank: usize) -> Vec<usize> {
    let mut v = vec![1; rank - s.len()];
    v.extend_from_slice(s);
    v
}

/// The shape numpy broadcasting gives operands of shapes `a` and `b`.
pub(super) fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>, Reason> {
    let rank = a.len().max(b.len());
    let (sa, sb) = (pad_rank(a, rank), pad_rank(b, rank));
    let mut shape = Vec::with_capacity(rank);
    for (&x, &y) in sa.iter().zip(&sb) {
        shape.push(match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return Err(format!("shapes {a:?} and {b:?} do not broadcast")),
        });
    }
    Ok(shape)
}

/// Elementwise `a op b` with numpy broadcasting (constant folding of weight plumbing such as
/// `Cast(int8) → Mul(scale)`).
pub(super) fn broadcast(
    a: (&[usize], &[f32]),
    b: (&[usize], &[f32]),
    op: fn(f32, f32) -> f32,
) -> Result<(Vec<usize>, Vec<f32>), Reason> {
    let rank = a.0.len().max(b.0.len());
    let (sa, sb) = (pad_rank(a.0, rank), pad_rank(b.0, rank));
    let shape = broadcast_shape(a.0, b.0)?;
    let n = numel(&shape)?;
    if numel(&sa)? != a.1.len() || numel(&sb)? != b.1.len() {
        return Err("operand sizes do not match their shapes".into());
    }
    // Strides of each operand in the output's index space (0 along broadcast axes).
    let strides = |s: &[usize]| {
        let mut st = vec![0; rank];
        let mut acc = 1;
        for i in (0..rank).rev() {
            st[i] = if s[i] == 1 { 0 } else { acc };
            acc *= s[i];
        }
        st
    };
    let (ta, tb) = (strides(&sa), strides(&sb));
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; rank];
    for _ in 0..n {
        let ia: usize = idx.iter().zip(&ta).map(|(i, s)| i * s).sum();
        let ib: usize = idx.iter().zip(&tb).map(|(i, s)| i * s).sum();
        out.push(op(a.1[ia], b.1[ib]));
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok((shape, out))
}
