//! Micro-kernel registry: one register-tile GEMM kernel per ISA, chosen once at run time
//! (x86_64) or at compile time (wasm32 `simd128` / `relaxed-simd`, aarch64 NEON).

pub use super::tile::Kernel;
use super::tile::QKernel;

/// Every kernel this machine can run, best first.
#[allow(clippy::vec_init_then_push)] // which pushes happen depends on the target
pub fn available() -> Vec<&'static Kernel> {
    let mut v: Vec<&'static Kernel> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            let vnni = std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vnni");
            v.push(if vnni {
                &super::avx512::KERNEL_VNNI
            } else {
                &super::avx512::KERNEL
            });
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            v.push(&super::avx2::KERNEL);
        }
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
    v.push(if !super::relaxed::int8_dot_works() {
        &super::relaxed::KERNEL_INT16
    } else if super::relaxed::dot_is_pmaddubsw() {
        &super::relaxed::KERNEL_PAIRS
    } else {
        &super::relaxed::KERNEL
    });
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    v.push(&super::simd128::KERNEL);
    #[cfg(target_arch = "aarch64")]
    v.push(&super::neon::KERNEL);
    v.push(&super::scalar::KERNEL);
    v
}

/// The portable quantized tile with `kern`'s layout: the reference its results are checked
/// against.
pub fn quant_reference(kern: &QKernel) -> &'static QKernel {
    if kern.a_bytes == 1 {
        &super::scalar::QUANT_I8
    } else {
        &super::scalar::QUANT
    }
}

/// The portable kernel computing q4 weights with int8 activations, as relaxed-simd does.
pub fn int8_reference() -> &'static Kernel {
    &super::scalar::KERNEL_INT8
}

/// The fastest kernel this machine runs.
pub fn select() -> &'static Kernel {
    available()[0]
}

/// The names of the kernels this machine runs, fastest first (avx512, avx2, neon,
/// relaxed-simd, simd128, scalar).
pub fn names() -> Vec<&'static str> {
    available().iter().map(|k| k.name).collect()
}

/// The kernel called `name`; an error naming the ones there are when this machine has none
/// by that name.
pub fn by_name(name: &str) -> crate::Result<&'static Kernel> {
    let all = available();
    all.iter().copied().find(|k| k.name == name).ok_or_else(|| {
        crate::Error::Input(format!(
            "unknown or unsupported ISA `{name}`; this machine runs {}",
            names().join(", ")
        ))
    })
}
