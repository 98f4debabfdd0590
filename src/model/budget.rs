//! Memory budgets: a model whose declared sizes need more than the budget, or a batch whose
//! activations would, is refused with [`Error::Budget`] before anything is allocated; big
//! buffers are allocated fallibly ([`Error::OutOfMemory`]), so that a failed `memory.grow` in
//! wasm fails one call instead of aborting the instance. See docs/reliability.md.

use crate::error::{Error, Result};

/// The default budget: 2 GiB in wasm32 (a 4 GiB address space that also holds the files as
/// fetched and the CPU's packed copy of the weights), 8 GiB natively (three times the f32
/// weights of the largest BERT-family checkpoints, XLM-RoBERTa-large's 2.2 GB).
pub const DEFAULT: u64 = if cfg!(target_arch = "wasm32") {
    2 << 30
} else {
    8 << 30
};

/// An error unless `needs` (`None`: overflowed) fits in `budget`.
pub fn check(what: impl FnOnce() -> String, needs: Option<u64>, budget: u64) -> Result<()> {
    match needs {
        Some(n) if n <= budget => Ok(()),
        needs => Err(Error::Budget {
            what: what(),
            needs,
            budget,
        }),
    }
}

/// Bytes of `count` values of `size` bytes each, overflow-checked.
pub fn bytes_of(count: impl TryInto<u64>, size: u64) -> Option<u64> {
    count.try_into().ok()?.checked_mul(size)
}

/// Bytes of an f32 tensor of `shape`, overflow-checked.
pub fn f32_bytes(shape: &[usize]) -> Option<u64> {
    shape
        .iter()
        .try_fold(4u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?))
}

/// A vector with room for `n` values, or [`Error::OutOfMemory`] where the allocator says no.
pub fn try_vec<T>(n: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    try_grow(&mut v, n, what)?;
    Ok(v)
}

/// Makes room for `n` values in all in `v` (fallibly), without changing its contents.
pub fn try_grow<T>(v: &mut Vec<T>, n: usize, what: &str) -> Result<()> {
    let more = n.saturating_sub(v.len());
    v.try_reserve_exact(more).map_err(|_| Error::OutOfMemory {
        what: what.to_string(),
        bytes: bytes_of(n, std::mem::size_of::<T>() as u64).unwrap_or(u64::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_overflow_checked_and_shown() {
        assert_eq!(f32_bytes(&[2, 3]), Some(24));
        assert_eq!(f32_bytes(&[]), Some(4));
        assert_eq!(f32_bytes(&[usize::MAX, usize::MAX, usize::MAX]), None);
        let e = check(|| "the weights".into(), Some(3 << 30), 2 << 30).unwrap_err();
        assert_eq!(
            e.to_string().split(" (raise").next().unwrap(),
            "the weights would take 3.0 GiB, more than the memory budget of 2.0 GiB"
        );
        assert!(check(|| "x".into(), None, u64::MAX).is_err());
        assert!(check(|| "x".into(), Some(10), 10).is_ok());
    }

    /// In wasm32 (the WASI run of the lib tests), a failed `memory.grow` is an error the
    /// caller sees, and the instance goes on allocating.
    #[cfg(target_arch = "wasm32")]
    #[test]
    fn a_failed_memory_grow_is_an_error_and_the_instance_lives_on() {
        let mut held: Vec<Vec<u8>> = Vec::new();
        let mut failed = None;
        for _ in 0..3 {
            match try_vec::<u8>(1900 << 20, "a big buffer") {
                Ok(v) => held.push(v),
                Err(e) => failed = Some(e),
            }
        }
        let e = failed.expect("three 1.9 GiB buffers in a 4 GiB memory");
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        drop(held);
        let v = try_vec::<u8>(64 << 20, "after").unwrap();
        assert!(v.capacity() >= 64 << 20);
    }

    #[test]
    fn an_impossible_allocation_is_an_error() {
        let e = try_vec::<f32>(usize::MAX / 2, "a buffer").unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        let mut v = vec![1.0f32; 4];
        try_grow(&mut v, 16, "more").unwrap();
        assert!(v.capacity() >= 16 && v == [1.0; 4]);
    }
}
