//! Portable micro-kernel; the compiler vectorises it for the baseline ISA.

use super::dynamic_quant::ActCodes;
use super::tile::{store_partial, Kernel, QKernel, QTile};

const MR: usize = 4;
const NR: usize = 8;

pub static KERNEL: Kernel = Kernel {
    name: "scalar",
    mr: MR,
    nr: NR,
    tile,
    tails: &[],
    streaming: &[],
    ops: &ROW_OPS,
    quant: Some(&QUANT),
    q8: &[&QUANT],
};

/// The int16 quantized tile (the portable one is exact to int16 activations; no native build
/// selects the scalar kernel unless asked to).
pub static QUANT: QKernel = QKernel {
    name: "scalar int16",
    mr: MR,
    nr: NR,
    group: 2,
    a_bytes: 2,
    tile: qtile::<2, 2, false, false>,
    tails: &[],
    quantize: super::quantize::quantize_rows,
    blocks: true,
    q8_a: ActCodes::Int16,
    ops: &ROW_OPS,
    w_range: (0, 255),
};

/// The portable kernel with the int8 tile: the numerics of relaxed-simd's int8 path, natively
/// (tests).
pub static KERNEL_INT8: Kernel = Kernel {
    name: "scalar-int8",
    quant: Some(&QUANT_I8),
    q8: &[&QUANT_I8, &QUANT],
    ..KERNEL
};

/// The int8 layout of the relaxed-simd tile, as a reference for it.
pub static QUANT_I8: QKernel = QKernel {
    name: "scalar int8",
    mr: MR,
    nr: NR,
    group: 4,
    a_bytes: 1,
    tile: qtile::<4, 1, false, false>,
    tails: &[],
    quantize: super::quantize::quantize_rows,
    blocks: true,
    q8_a: ActCodes::Int8,
    ops: &ROW_OPS,
    w_range: (0, 127),
};

/// The int8 layout of the native q8 tiles (`vpdpbusd`: unsigned activations, signed weights),
/// as a reference for them.
#[cfg_attr(not(test), allow(dead_code))] // the reference of the native q8 tiles (tests)
pub static QUANT_U8S8: QKernel = QKernel {
    name: "scalar u8s8",
    mr: MR,
    nr: NR,
    group: 4,
    a_bytes: 1,
    tile: qtile::<4, 1, true, true>,
    tails: &[],
    quantize: super::quantize::quantize_rows,
    blocks: false,
    q8_a: ActCodes::Uint8,
    ops: &ROW_OPS,
    w_range: (-128, 127),
};

super::math::row_ops!(f32);

/// # Safety
/// `a` holds `k*MR` floats, `b` holds `k*NR`, and `c` covers `rows × cols` with stride `ldc`.
#[allow(clippy::too_many_arguments)]
unsafe fn tile(
    k: usize,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
) {
    let a = std::slice::from_raw_parts(a, k * MR);
    let b = std::slice::from_raw_parts(b, k * NR);
    let mut acc = [0f32; MR * NR];
    for (ak, bk) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        for i in 0..MR {
            for j in 0..NR {
                acc[i * NR + j] += ak[i] * bk[j];
            }
        }
    }
    store_partial(&acc, NR, c, ldc, rows, cols, accumulate);
}

/// # Safety
/// `t` points at a full strip and panel of `t.blocks` blocks (see [`QTile`]) in the layout of
/// `G`-wide groups and `W`-byte A codes (unsigned bytes when `AU`; weights signed when `WS`),
/// and `c` covers `rows × cols` with stride `ldc`.
unsafe fn qtile<const G: usize, const W: usize, const AU: bool, const WS: bool>(
    t: QTile,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
) {
    let steps = t.blocks * t.steps;
    let a = std::slice::from_raw_parts(t.a, steps * G * MR * W);
    let b = std::slice::from_raw_parts(t.b, steps * G * NR);
    let sa = std::slice::from_raw_parts(t.a_scales, t.blocks * 2 * MR);
    let per_block = if t.zero.is_some() || t.channel.is_some() {
        NR
    } else {
        2 * NR
    };
    let sb = std::slice::from_raw_parts(t.b_scales, t.blocks * per_block);
    let code = |at: usize| match W {
        1 if AU => a[at] as i32,
        1 => a[at] as i8 as i32,
        _ => i16::from_le_bytes([a[at], a[at + 1]]) as i32,
    };
    let weight = |at: usize| if WS { b[at] as i8 as i32 } else { b[at] as i32 };
    let mut acc = [0f32; MR * NR];
    for blk in 0..t.blocks {
        let (sa, sb) = (&sa[blk * 2 * MR..], &sb[blk * per_block..]);
        let mut dot = [0i32; MR * NR];
        for step in blk * t.steps..(blk + 1) * t.steps {
            let (a0, b0) = (step * G * MR, step * G * NR);
            for i in 0..MR {
                for j in 0..NR {
                    dot[i * NR + j] += (0..G)
                        .map(|u| code((a0 + i * G + u) * W) * weight(b0 + j * G + u))
                        .sum::<i32>();
                }
            }
        }
        if let Some(ch) = t.channel {
            let (ta, tb) = (
                std::slice::from_raw_parts(ch.a, 2 * MR),
                std::slice::from_raw_parts(ch.b, 2 * NR),
            );
            for i in 0..MR {
                for j in 0..NR {
                    let extra = match ch.extra.is_null() {
                        true => 0,
                        false => *ch.extra.add(i * NR + j),
                    };
                    let total = dot[i * NR + j]
                        .wrapping_add(tb[j].wrapping_mul(ta[i]))
                        .wrapping_add(ta[MR + i].wrapping_mul(tb[NR + j]))
                        .wrapping_add(extra);
                    acc[i * NR + j] = total as f32 * (sa[i] * sb[j]);
                }
            }
            break;
        }
        for i in 0..MR {
            for j in 0..NR {
                acc[i * NR + j] += match t.zero {
                    // the shared zero point subtracted from the sums (exact below 2^24)
                    Some(z) => (dot[i * NR + j] as f32 - z as f32 * sa[MR + i]) * (sa[i] * sb[j]),
                    None => {
                        dot[i * NR + j] as f32 * (sa[i] * sb[j]) - sa[i] * sa[MR + i] * sb[NR + j]
                    }
                };
            }
        }
    }
    store_partial(&acc, NR, c, ldc, rows, cols, false);
}
