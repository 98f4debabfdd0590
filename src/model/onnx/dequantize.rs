//! The dequantization arithmetic of ONNX's quantized weights: `DequantizeLinear` (per
//! tensor, per axis or blocked), `MatMulNBits`' packed codes and `MatMulBnb4`'s FP4 / NF4
//! blocks. Errors are plain reasons; the caller attaches the tensor or node name.

use super::super::weights::BlockQuant;
use super::tensor::{len_mismatch, numel, unpack_bits, Reason};

/// ONNX `DequantizeLinear`: `y = (x - zp) * scale`, with the scale per tensor (one element),
/// per `axis` (1-D, one per index of that axis) or blocked (same rank as `x`, `block_size`
/// consecutive elements along `axis` share one).
pub(super) fn dequantize_linear(
    x: &[i32],
    shape: &[usize],
    scale: &[f32],
    scale_shape: &[usize],
    zero_point: Option<&[f32]>,
    axis: i64,
    block_size: usize,
) -> Result<Vec<f32>, Reason> {
    if let Some(zp) = zero_point {
        if zp.len() != scale.len() {
            return Err(format!(
                "zero point has {} values, scale has {}",
                zp.len(),
                scale.len()
            ));
        }
    }
    let zp_at = |i: usize| zero_point.and_then(|z| z.get(i)).copied().unwrap_or(0.0);
    if let [s] = scale {
        let z = zp_at(0);
        return Ok(x.iter().map(|&q| (q as f32 - z) * s).collect());
    }
    let rank = shape.len() as i64;
    let axis = if axis < 0 { axis + rank } else { axis };
    let ax = usize::try_from(axis)
        .ok()
        .filter(|&a| a < shape.len())
        .ok_or_else(|| format!("axis {axis} out of range for shape {shape:?}"))?;
    let d = shape[ax];
    let inner = numel(&shape[ax + 1..])?;
    let (blocks, bs) = if scale_shape.len() == 1 && scale.len() == d {
        (d, 1)
    } else if block_size > 0
        && scale_shape.len() == shape.len()
        && scale_shape.get(ax) == Some(&d.div_ceil(block_size))
        && scale_shape
            .iter()
            .zip(shape)
            .enumerate()
            .all(|(i, (s, x))| i == ax || s == x)
    {
        (d.div_ceil(block_size), block_size)
    } else {
        return Err(format!(
            "scale shape {scale_shape:?} fits neither per-tensor, per-axis ({ax}) nor \
             blocked (block_size {block_size}) quantization of shape {shape:?}"
        ));
    };
    if numel(shape)? != x.len() {
        return Err(len_mismatch("quantized data", x.len(), numel(shape)?));
    }
    if bs == 1 && inner == 1 && scale_shape.len() == 1 {
        // Per column of the last axis (a MatMul's B): rows of `d`, no index arithmetic.
        let zp: Vec<f32> = (0..d).map(zp_at).collect();
        let mut out = Vec::with_capacity(x.len());
        for row in x.chunks_exact(d.max(1)) {
            out.extend((row.iter().zip(scale).zip(&zp)).map(|((&q, s), z)| (q as f32 - z) * s));
        }
        return Ok(out);
    }
    x.iter()
        .enumerate()
        .map(|(i, &q)| {
            let c = (i / inner) % d;
            let si = if bs == 1 && scale_shape.len() == 1 {
                c
            } else {
                ((i / (inner * d)) * blocks + c / bs) * inner + i % inner
            };
            let s = scale.get(si).ok_or("scale index out of range")?;
            Ok((q as f32 - zp_at(si)) * s)
        })
        .collect()
}

/// Zero points of `MatMulNBits`: packed like the weights, or one float per block.
pub(super) enum NBitsZeroPoints<'a> {
    Packed(&'a [u8]),
    Float(&'a [f32]),
}

/// `com.microsoft.MatMulNBits` weight: `b` is `[n, blocks, block_size * bits / 8]`, scales
/// `[n * blocks]`; returns `[n, k]` (PyTorch `[out, in]`) and, when the codes fit in 7 bits and
/// blocks are contiguous runs of k, the integer form. `g_idx` maps column k to its block.
#[allow(clippy::too_many_arguments)]
pub(super) fn dequantize_nbits(
    b: &[u8],
    scales: &[f32],
    zero_points: Option<NBitsZeroPoints>,
    g_idx: Option<&[i32]>,
    n: usize,
    k: usize,
    bits: usize,
    block_size: usize,
) -> Result<(Vec<f32>, Option<BlockQuant>), Reason> {
    let blob = block_size
        .checked_mul(bits)
        .filter(|&b| b > 0 && b.is_multiple_of(8))
        .map(|b| b / 8);
    let valid = matches!(bits, 2 | 4 | 8) && n > 0 && k > 0;
    let Some(blob) = blob.filter(|_| valid) else {
        return Err(format!(
            "invalid K={k}, N={n}, bits={bits}, block_size={block_size}"
        ));
    };
    let blocks = k.div_ceil(block_size);
    let expect = |what: &str, got: usize, per_row: Option<usize>| match per_row
        .and_then(|r| r.checked_mul(n))
    {
        Some(want) if want == got => Ok(()),
        _ => Err(format!(
            "{what} has {got} elements, expected N={n} x {per_row:?}"
        )),
    };
    let row_bytes = blocks.checked_mul(blob);
    expect("B", b.len(), row_bytes)?;
    // B's size now bounds everything below: blocks <= row_bytes <= b.len().
    let row_bytes = row_bytes.unwrap_or_default();
    let zp_row_bytes = (blocks * bits).div_ceil(8);
    expect("scales", scales.len(), Some(blocks))?;
    match &zero_points {
        Some(NBitsZeroPoints::Packed(z)) => expect("zero_points", z.len(), Some(zp_row_bytes))?,
        Some(NBitsZeroPoints::Float(z)) => expect("zero_points", z.len(), Some(blocks))?,
        None => {}
    }
    if let Some(g) = g_idx.filter(|g| g.len() != k) {
        return Err(len_mismatch("g_idx", g.len(), k));
    }
    let default_zp = [(1u32 << (bits - 1)) as f32];
    let mut out = Vec::with_capacity(n * k);
    let contiguous = g_idx.is_none_or(|g| (0..k).all(|kk| g[kk] as usize == kk / block_size));
    let mut quant = (bits < 8 && contiguous).then(|| BlockQuant {
        block: block_size,
        codes: Vec::with_capacity(n * k),
        scales: scales.to_vec(),
        zero_points: Vec::with_capacity(n * blocks),
    });
    let rows = b.chunks_exact(row_bytes).zip(scales.chunks_exact(blocks));
    for (row, (q_row, s_row)) in rows.enumerate() {
        let zp: Vec<f32> = match &zero_points {
            None => default_zp.repeat(blocks),
            Some(NBitsZeroPoints::Float(z)) => {
                z.chunks_exact(blocks).nth(row).unwrap_or_default().to_vec()
            }
            Some(NBitsZeroPoints::Packed(z)) => {
                let packed = z.chunks_exact(zp_row_bytes).nth(row).unwrap_or_default();
                unpack_bits(packed, bits)?
                    .into_iter()
                    .map(|z| z as f32)
                    .collect()
            }
        };
        let codes = unpack_bits(q_row, bits)?;
        if let Some(q) = quant.as_mut() {
            q.codes.extend(codes.iter().take(k).map(|&c| c as u8));
            q.zero_points.extend(zp.iter().take(blocks));
        }
        // Blocks are contiguous in a row, so unpacked position == column (tail padding dropped).
        if contiguous && zp.len() >= blocks {
            // `codes` holds blocks · block_size ≥ k values, `s_row` and `zp` one per block.
            for ((part, &s), &z) in codes[..k].chunks(block_size).zip(s_row).zip(&zp) {
                out.extend(part.iter().map(|&qv| (qv as f32 - z) * s));
            }
            continue;
        }
        for (col, qv) in codes.into_iter().enumerate().take(k) {
            let blk = match g_idx {
                Some(g) => g
                    .get(col)
                    .and_then(|&b| usize::try_from(b).ok())
                    .unwrap_or(usize::MAX),
                None => col / block_size,
            };
            let (Some(s), Some(z)) = (s_row.get(blk), zp.get(blk)) else {
                return Err(format!("g_idx[{col}] is not a valid block index"));
            };
            out.push((qv as f32 - z) * s);
        }
    }
    Ok((out, quant))
}

/// NF4 code book of onnxruntime's `MatMulBnb4` (`quant_type` 1), as in bitsandbytes.
const NF4: [f32; 16] = [
    -1.0,
    -0.696_192_8,
    -0.525_073_05,
    -0.394_917_5,
    -0.284_441_38,
    -0.184_773_43,
    -0.091_050_036,
    0.0,
    0.079_580_3,
    0.160_930_2,
    0.246_112_3,
    0.337_915_24,
    0.440_709_83,
    0.562_617,
    0.722_956_84,
    1.0,
];

/// FP4 code book (`quant_type` 0): sign bit, then a 3-bit float with bias 3, divided by 12.
const FP4: [f32; 16] = [
    0.0,
    5.208_333e-3,
    0.666_666_7,
    1.0,
    0.333_333_34,
    0.5,
    0.166_666_67,
    0.25,
    -0.0,
    -5.208_333e-3,
    -0.666_666_7,
    -1.0,
    -0.333_333_34,
    -0.5,
    -0.166_666_67,
    -0.25,
];

/// `com.microsoft.MatMulBnb4` weight: the `[n, k]` (PyTorch layout) matrix flattened and cut
/// into blocks of `block_size` consecutive values, each stored as 4-bit codes (high nibble
/// first) into a code book scaled by the block's `absmax`.
pub(super) fn dequantize_bnb4(
    packed: &[u8],
    absmax: &[f32],
    n: usize,
    k: usize,
    block_size: usize,
    quant_type: i64,
) -> Result<Vec<f32>, Reason> {
    let book = match quant_type {
        0 => &FP4,
        1 => &NF4,
        q => return Err(format!("quant_type {q} is neither 0 (FP4) nor 1 (NF4)")),
    };
    let numel = n
        .checked_mul(k)
        .filter(|&v| v > 0 && block_size > 0)
        .ok_or_else(|| format!("invalid K={k}, N={n}, block_size={block_size}"))?;
    if packed.len() != numel.div_ceil(2) {
        return Err(len_mismatch("B", packed.len(), numel.div_ceil(2)));
    }
    if absmax.len() != numel.div_ceil(block_size) {
        return Err(len_mismatch(
            "absmax",
            absmax.len(),
            numel.div_ceil(block_size),
        ));
    }
    Ok((0..numel)
        .map(|i| {
            let byte = packed[i / 2];
            let code = if i % 2 == 0 { byte >> 4 } else { byte & 0xf };
            book[code as usize] * absmax[i / block_size]
        })
        .collect())
}
