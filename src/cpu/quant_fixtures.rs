//! What the integer GEMM's unit tests share: the quantized tiles this machine runs and random
//! weights.
#![cfg(test)]

use super::kernels::{available, quant_reference};
use super::tile::QKernel;
use crate::model::{BlockQuant, ChannelQuant};

/// Both relaxed-simd int8 tiles (where they compute exactly), whichever one this engine's
/// kernel runs.
fn add_relaxed_tiles(v: &mut Vec<&'static QKernel>) {
    #[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
    if crate::cpu::relaxed::int8_dot_works() {
        for k in crate::cpu::relaxed::QUANT_TILES {
            if !v.iter().any(|h| std::ptr::eq(*h, k)) {
                v.push(k);
            }
        }
    }
    let _ = v;
}

/// Every quantized tile here, and the portable int8 one.
pub(super) fn quant_kernels() -> Vec<&'static QKernel> {
    let mut v: Vec<_> = available().into_iter().filter_map(|k| k.quant).collect();
    add_relaxed_tiles(&mut v);
    v.extend(v.clone().into_iter().map(quant_reference));
    v.push(&crate::cpu::scalar::QUANT_I8);
    v
}

pub(super) fn rand(len: usize, seed: u64) -> impl Iterator<Item = u64> {
    let mut s = seed.wrapping_mul(6364136223846793005) ^ 0x9E37_79B9_7F4A_7C15;
    (0..len).map(move |_| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    })
}

pub(super) fn quant(n: usize, k: usize, block: usize, seed: u64) -> BlockQuant {
    let blocks = k.div_ceil(block);
    BlockQuant {
        block,
        codes: rand(n * k, seed).map(|r| (r % 16) as u8).collect(),
        scales: rand(n * blocks, seed + 1)
            .map(|r| (r % 1000) as f32 * 1e-4 + 1e-3)
            .collect(),
        zero_points: rand(n * blocks, seed + 2)
            .map(|r| (r % 16) as f32)
            .collect(),
    }
}

/// Every q8 tile here, and the portable references of every activation layout.
pub(super) fn q8_kernels() -> Vec<&'static QKernel> {
    let mut v: Vec<&'static QKernel> = Vec::new();
    for k in available() {
        v.extend(k.q8.iter().copied());
    }
    add_relaxed_tiles(&mut v);
    use crate::cpu::scalar::{QUANT as I16, QUANT_I8, QUANT_U8S8};
    v.extend([&I16, &QUANT_I8, &QUANT_U8S8]);
    v
}

/// Random per-channel codes in `lo..=hi` with zero points in `zp`.
pub(super) fn channel_quant(
    n: usize,
    k: usize,
    lo: i32,
    hi: i32,
    zp: (i32, i32),
    seed: u64,
) -> ChannelQuant {
    let span = (hi - lo + 1) as u64;
    let zspan = (zp.1 - zp.0 + 1) as u64;
    ChannelQuant {
        signed: lo < 0,
        codes: rand(n * k, seed)
            .map(|r| (lo + (r % span) as i32) as u8)
            .collect(),
        scales: rand(n, seed + 1)
            .map(|r| (r % 1000) as f32 * 1e-5 + 1e-4)
            .collect(),
        zero_points: rand(n, seed + 2)
            .map(|r| zp.0 + (r % zspan) as i32)
            .collect(),
    }
}
