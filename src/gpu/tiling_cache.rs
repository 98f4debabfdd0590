//! GEMM tilings this process knows, timed here or restored from saved ones (`saved.rs`), by
//! adapter identity, kernel choice and shape, for the life of the process; and all of them as
//! the JSON `saved.rs` reads back.

use super::context::KernelChoice;
use super::saved;
use super::tune::{CacheKey, GemmKey, Tuned};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

/// Tilings timed so far in this process (or restored from saved ones), by adapter identity,
/// kernel choice and shape.
static CACHE: LazyLock<Mutex<HashMap<CacheKey, Tuned>>> = LazyLock::new(Default::default);
/// How many tilings this process has timed: what to save changes when this does.
static TIMED: AtomicU64 = AtomicU64::new(0);

/// The tiling of `key` timed in this process, or else a valid saved one (then kept here).
pub fn cached(adapter: &str, choice: &KernelChoice, key: GemmKey) -> Option<Tuned> {
    let id = (adapter.to_string(), *choice, key);
    if let Some(t) = lock().get(&id) {
        return Some(*t);
    }
    let restored = saved::restore(adapter, choice, key)?;
    lock().insert(id, restored);
    Some(restored)
}

pub fn remember(adapter: &str, choice: &KernelChoice, key: GemmKey, tuned: Tuned) {
    lock().insert((adapter.to_string(), *choice, key), tuned);
    TIMED.fetch_add(1, Ordering::Relaxed);
}

/// Every tiling this process knows, timed or restored.
pub fn all() -> Vec<(CacheKey, Tuned)> {
    lock().iter().map(|(k, t)| (k.clone(), *t)).collect()
}

/// The number of tilings timed in this process so far.
pub fn timed_count() -> u64 {
    TIMED.load(Ordering::Relaxed)
}

/// Forgets the tilings of `keys` in this process, as a new process would not know them.
#[cfg(any(test, feature = "test-hooks"))]
pub fn forget(keys: &[CacheKey]) {
    let mut cache = lock();
    for k in keys {
        cache.remove(k);
    }
}

/// Every tiling this process timed or restored, and the saved rows it read and did not use, as
/// JSON for `saved::import`.
pub fn export() -> String {
    saved::export(&all())
}

/// Forgets the tilings of this process that `json`'s rows have, as a new process would not
/// know them (tests of restoring).
#[cfg(any(test, feature = "test-hooks"))]
pub fn forget_for_test(json: &str) -> crate::error::Result<()> {
    forget(&saved::keys_in(json, all())?);
    Ok(())
}

fn lock() -> std::sync::MutexGuard<'static, HashMap<CacheKey, Tuned>> {
    CACHE.lock().unwrap_or_else(|p| p.into_inner())
}
