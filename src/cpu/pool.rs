//! Helper threads that share out one parallel loop at a time. The thread that calls [`run`]
//! (the dispatcher) publishes the loop, wakes the helpers and takes tasks itself; tasks are
//! claimed one by one, so a helper that wakes late takes fewer. Natively the helpers are
//! `std` threads; in browsers they are Web Workers sharing the module's memory (the threads
//! build), each working in [`helper_main`]. The dispatcher never sleeps: it spins while the
//! last tasks finish, which also works on a browser's main thread, where waiting traps.
//!
//! Each output element is computed by one task with the same kernel whatever the thread
//! count, so results do not depend on it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};

/// Workers at most, the dispatcher included (per-worker scratch is sized for this).
pub const MAX_WORKERS: usize = 16;

/// A loop body: `(task, worker)`, worker 0 being the dispatcher (or any serial caller).
pub type Task<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// Workers a loop may use (set by [`set_threads`]).
static WANTED: AtomicUsize = AtomicUsize::new(1);
/// Helpers that ever started; helper `i` (1-based) is worker `i`.
static HELPERS: AtomicUsize = AtomicUsize::new(0);
/// Set while a dispatcher owns the pool: loops started meanwhile (nested in a task, or from
/// another thread) run serially in their caller.
static BUSY: AtomicBool = AtomicBool::new(false);
/// Bumped for each loop; idle helpers sleep on it.
static EPOCH: AtomicU32 = AtomicU32::new(0);
/// `epoch << 32 | next task`: a claim succeeds only for the current loop.
static CLAIM: AtomicU64 = AtomicU64::new(0);
/// Address of the current loop's `Task` (a fat reference on the dispatcher's stack).
static JOB: AtomicUsize = AtomicUsize::new(0);
static TASKS: AtomicUsize = AtomicUsize::new(0);
static DONE: AtomicUsize = AtomicUsize::new(0);

/// Set by [`rest`] until the next loop: idle helpers sleep at once instead of spinning.
static RESTING: AtomicBool = AtomicBool::new(false);

/// Spins of an idle helper before it sleeps: consecutive loops of one forward pass are
/// usually closer together than a wake-up takes, which is slow in browsers
/// (docs/performance.md). Native spins pause, wasm's do not: both come to a few milliseconds.
pub const SPINS: u32 = if cfg!(target_arch = "wasm32") {
    1 << 22
} else {
    1 << 16
};

/// Uses up to `n` workers (the calling thread included) for later loops. Natively this
/// starts the missing helper threads; in wasm the JS side starts Web Workers that call
/// [`helper_main`].
pub fn set_threads(n: usize) {
    let n = n.clamp(1, MAX_WORKERS);
    WANTED.store(n, SeqCst);
    #[cfg(not(target_arch = "wasm32"))]
    {
        static SPAWNED: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
        let mut spawned = SPAWNED.lock().unwrap_or_else(|e| e.into_inner());
        while *spawned + 1 < n {
            let started = std::thread::Builder::new()
                .name(format!("webert-{}", *spawned + 1))
                .spawn(|| while helper_main() {});
            if started.is_err() {
                break;
            }
            *spawned += 1;
        }
        while HELPERS.load(SeqCst) < *spawned {
            std::thread::yield_now();
        }
    }
}

/// Tells idle helpers that no loop follows soon (a forward pass ended): they sleep now
/// instead of spinning, which would take cores from the page (and other engines) and drain
/// batteries. The next loop wakes them.
pub fn rest() {
    RESTING.store(true, SeqCst);
}

/// Workers the next loop may use: those wanted and started.
pub fn threads() -> usize {
    WANTED.load(SeqCst).min(HELPERS.load(SeqCst) + 1)
}

/// Workers asked for (the calling thread included), started or not.
pub fn wanted() -> usize {
    WANTED.load(SeqCst)
}

/// Helpers that have started.
pub fn helpers() -> usize {
    HELPERS.load(SeqCst)
}

/// Whether this build can run helpers at all (wasm needs the atomics build).
pub const fn can_thread() -> bool {
    cfg!(any(not(target_arch = "wasm32"), target_feature = "atomics"))
}

/// How many pieces to cut `work` units into: one per worker thrice over (so that a late
/// helper costs little), never more than the units, and one when running serially.
pub fn pieces(work: usize) -> usize {
    match threads() {
        1 => 1,
        t => work.min(3 * t).max(1),
    }
}

/// Runs `f(task, worker)` for every task in `0..tasks`, on the pool when it is free.
pub fn run(tasks: usize, f: Task) {
    let parallel =
        tasks > 1 && threads() > 1 && BUSY.compare_exchange(false, true, SeqCst, SeqCst).is_ok();
    if !parallel {
        (0..tasks).for_each(|i| f(i, 0));
        return;
    }
    // Close the previous loop before its JOB and TASKS are replaced: a helper that read its
    // exhausted claim `(epoch, n)` and then the new, larger TASKS would otherwise claim task n
    // of the new loop under the old epoch (and count it done for the new loop).
    CLAIM.fetch_or(0xffff_ffff, SeqCst);
    let job: Task = f;
    JOB.store(&job as *const Task as usize, SeqCst);
    TASKS.store(tasks, SeqCst);
    DONE.store(0, SeqCst);
    let epoch = EPOCH.load(SeqCst).wrapping_add(1);
    CLAIM.store((epoch as u64) << 32, SeqCst);
    RESTING.store(false, SeqCst);
    EPOCH.store(epoch, SeqCst);
    wake_all(&EPOCH);
    work(epoch, 0);
    let mut spins = 0;
    while DONE.load(SeqCst) < tasks {
        assert!(
            !POISONED.load(SeqCst),
            "a helper thread of the CPU pool panicked"
        );
        std::hint::spin_loop();
        spins += 1;
    }
    STATS[2].fetch_add(spins, SeqCst);
    STATS[3].fetch_add(1, SeqCst);
    let panicked = PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
    BUSY.store(false, SeqCst);
    if let Some(payload) = panicked {
        std::panic::resume_unwind(payload);
    }
}

/// Set by the wasm panic hook: a helper that panics aborts (wasm has no unwinding) and will
/// never count its task done.
static POISONED: AtomicBool = AtomicBool::new(false);

/// Marks the pool broken (see [`POISONED`]).
pub fn poison() {
    POISONED.store(true, SeqCst);
}

/// The first panic of a task in the current loop, raised again by the dispatcher once every
/// task has run (unwinding earlier would free `job` while helpers still call it).
static PANIC: std::sync::Mutex<Option<Box<dyn std::any::Any + Send>>> = std::sync::Mutex::new(None);

/// A helper's life: register as the next worker (on the first call in this thread), then
/// take tasks of every loop. Natively it never returns. In wasm it returns after sleeping
/// idle for [`IDLE_RETURN_MS`], for the worker to call it again from its event loop, so that
/// the worker's isolate is not blocked for good (V8 runs a new worker's WebAssembly
/// unoptimized for its first few forwards; the JS side warms helpers up at load). Returns
/// `false` when there is no room for another worker (or this build has no threads).
pub fn helper_main() -> bool {
    thread_local!(static ME: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });
    if !can_thread() {
        return false;
    }
    let mut me = ME.get();
    if me == 0 {
        me = HELPERS.fetch_add(1, SeqCst) + 1;
        if me >= MAX_WORKERS {
            HELPERS.fetch_sub(1, SeqCst);
            return false;
        }
        ME.set(me);
    }
    let mut seen = EPOCH.load(SeqCst);
    // A call (the first, or again after an idle timeout) sleeps until a loop comes; helpers
    // spin (`Some(spins so far)`) only between the loops of a burst.
    let mut spinning: Option<u32> = None;
    loop {
        while EPOCH.load(SeqCst) == seen {
            match spinning {
                Some(n) if n < SPINS && !RESTING.load(SeqCst) => {
                    spinning = Some(n + 1);
                    std::hint::spin_loop();
                }
                _ => {
                    count_spins(spinning.take());
                    SLEEPS.fetch_add(1, SeqCst);
                    if !sleep_while(&EPOCH, seen) {
                        return true;
                    }
                }
            }
        }
        count_spins(spinning);
        seen = EPOCH.load(SeqCst);
        spinning = Some(0);
        if me < WANTED.load(SeqCst) {
            work(seen, me);
        }
    }
}

/// How long an idle wasm helper sleeps before it returns to its event loop.
pub const IDLE_RETURN_MS: i64 = 20;

/// Claims and runs tasks of loop `epoch` until none are left (or another loop started).
fn work(epoch: u32, me: usize) {
    loop {
        let claim = CLAIM.load(SeqCst);
        if (claim >> 32) as u32 != epoch {
            return;
        }
        // Read before the claim: a successful claim proves the loop was still running, so
        // neither had been replaced (`run` closes a loop before it replaces them).
        let (job, tasks) = (JOB.load(SeqCst), TASKS.load(SeqCst));
        let task = (claim & 0xffff_ffff) as usize;
        if task >= tasks {
            return;
        }
        if CLAIM
            .compare_exchange(claim, claim + 1, SeqCst, SeqCst)
            .is_err()
        {
            continue;
        }
        // SAFETY: `job` points at the dispatcher's `Task`, which outlives the loop: the
        // dispatcher returns only after every claimed task counted itself done.
        let f = unsafe { *(job as *const Task) };
        if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(task, me)))
        {
            PANIC
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(payload);
        }
        DONE.fetch_add(1, SeqCst);
        STATS[usize::from(me > 0)].fetch_add(1, SeqCst);
    }
}

/// Tasks of parallel loops run by the dispatcher and by helpers, the dispatcher's spins
/// waiting for the helpers' last tasks, parallel loops, and the helpers' spins waiting for
/// the next loop.
static STATS: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];

/// Adds a helper's spins between two loops (if it was spinning) to [`STATS`].
fn count_spins(spinning: Option<u32>) {
    if let Some(n) = spinning {
        STATS[4].fetch_add(n as usize, SeqCst);
    }
}

/// Times a helper went to sleep.
static SLEEPS: AtomicUsize = AtomicUsize::new(0);

/// Times a helper went to sleep, ever (for tests and diagnostics).
pub fn helper_sleeps() -> usize {
    SLEEPS.load(SeqCst)
}

/// Reads and resets [`STATS`] (for profiles): `[dispatcher tasks, helper tasks, dispatcher
/// spins, loops, helper spins]`.
pub fn take_stats() -> [usize; 5] {
    std::array::from_fn(|i| STATS[i].swap(0, SeqCst))
}

/// Sleeps while `word` holds `seen`; `false` when it timed out instead.
#[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
fn sleep_while(word: &AtomicU32, seen: u32) -> bool {
    // SAFETY: `word` is a live, aligned u32 in the shared memory. Helpers run in Web Workers,
    // where waiting is allowed.
    let woke = unsafe {
        core::arch::wasm32::memory_atomic_wait32(
            word.as_ptr().cast(),
            seen as i32,
            IDLE_RETURN_MS * 1_000_000,
        )
    };
    woke != 2
}

#[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
fn wake_all(word: &AtomicU32) {
    // SAFETY: as above; notifying never blocks.
    unsafe { core::arch::wasm32::memory_atomic_notify(word.as_ptr().cast(), u32::MAX) };
}

#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
fn sleep_while(_: &AtomicU32, _: u32) -> bool {
    false
}

#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
fn wake_all(_: &AtomicU32) {}

#[cfg(not(target_arch = "wasm32"))]
static SLEEP: (std::sync::Mutex<()>, std::sync::Condvar) =
    (std::sync::Mutex::new(()), std::sync::Condvar::new());

#[cfg(not(target_arch = "wasm32"))]
fn sleep_while(word: &AtomicU32, seen: u32) -> bool {
    let guard = SLEEP.0.lock().unwrap_or_else(|e| e.into_inner());
    if word.load(SeqCst) == seen {
        drop(SLEEP.1.wait(guard));
    }
    true
}

#[cfg(not(target_arch = "wasm32"))]
fn wake_all(_: &AtomicU32) {
    let _guard = SLEEP.0.lock().unwrap_or_else(|e| e.into_inner());
    SLEEP.1.notify_all();
}

/// A pointer that tasks share to write disjoint parts of one buffer.
#[derive(Clone, Copy)]
pub struct SharedMut<T>(pub *mut T);

impl<T> SharedMut<T> {
    /// The pointer (a method, so that closures capture the whole `Sync` wrapper).
    pub fn get(self) -> *mut T {
        self.0
    }
}

// SAFETY: only used where every task writes a part of the buffer no other task touches.
unsafe impl<T> Send for SharedMut<T> {}
unsafe impl<T> Sync for SharedMut<T> {}
