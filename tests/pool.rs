//! The CPU thread pool on its own (its own test binary: the pool is global, and loops that
//! other tests started meanwhile would run inline or wake the helpers).

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use webert::cpu::pool::*;

/// The pool is global: these tests take turns (a loop started while another test's loop
/// runs would run inline, and `set_threads` changes every test's thread count).
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn every_task_runs_once_and_nested_loops_run_inline() {
    let _turn = one_at_a_time();
    set_threads(4);
    for tasks in [0, 1, 2, 7, 100, 1000] {
        let hits: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
        let workers: Vec<AtomicUsize> = (0..MAX_WORKERS).map(|_| AtomicUsize::new(0)).collect();
        run(tasks, &|i, w| {
            let inner = AtomicUsize::new(0);
            run(3, &|_, w2| {
                // a loop inside a parallel loop runs in its caller
                assert!(tasks < 2 || w2 == 0);
                inner.fetch_add(1, SeqCst);
            });
            assert_eq!(inner.load(SeqCst), 3);
            hits[i].fetch_add(1, SeqCst);
            workers[w].fetch_add(1, SeqCst);
        });
        assert!(hits.iter().all(|h| h.load(SeqCst) == 1), "{tasks} tasks");
        let total: usize = workers.iter().map(|w| w.load(SeqCst)).sum();
        assert_eq!(total, tasks);
    }
    set_threads(1);
}

#[test]
fn many_short_loops_of_changing_sizes_run_each_task_once() {
    let _turn = one_at_a_time();
    set_threads(4);
    for round in 0..50_000 {
        let tasks = 1 + (round * 7) % 9;
        if round % 97 == 0 {
            rest(); // helpers go to sleep: the next loop must wake them
        }
        let hits: Vec<AtomicUsize> = (0..9).map(|_| AtomicUsize::new(0)).collect();
        run(tasks, &|i, _| {
            hits[i].fetch_add(1, SeqCst);
        });
        for (i, h) in hits.iter().enumerate() {
            assert_eq!(
                h.load(SeqCst),
                usize::from(i < tasks),
                "round {round} task {i}"
            );
        }
    }
    set_threads(1);
}

#[test]
fn resting_helpers_sleep_without_spinning() {
    let _turn = one_at_a_time();
    set_threads(3);
    // A round where the caller lost its core before `rest` lets the helpers spin on: judge
    // the best of 20 (without `rest`, every round has both helpers spin SPINS times).
    let mut fewest = usize::MAX;
    for _ in 0..20 {
        take_stats();
        let slept = helper_sleeps();
        run(8, &|_, _| {});
        rest();
        // Both helpers wake for the loop (even when the caller ran every task), then sleep.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while helper_sleeps() < slept + 2 {
            assert!(std::time::Instant::now() < deadline, "helpers never slept");
            std::thread::yield_now();
        }
        fewest = fewest.min(take_stats()[4]);
    }
    assert!(fewest < SPINS as usize, "{fewest} spins after rest()");
    set_threads(1);
}

#[test]
#[cfg(panic = "unwind")]
fn a_panicking_task_reaches_the_caller_after_the_loop() {
    let _turn = one_at_a_time();
    set_threads(3);
    let finished = AtomicUsize::new(0);
    let caught = std::panic::catch_unwind(|| {
        run(50, &|i, _| {
            if i == 17 {
                panic!("task 17");
            }
            finished.fetch_add(1, SeqCst);
        })
    });
    assert!(caught.is_err());
    assert_eq!(finished.load(SeqCst), 49, "the other tasks all ran");
    let after = AtomicUsize::new(0);
    run(10, &|_, _| {
        after.fetch_add(1, SeqCst);
    });
    assert_eq!(after.load(SeqCst), 10, "the pool works after a panic");
    set_threads(1);
}
