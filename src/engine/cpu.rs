//! The engine's CPU side: one model shared by every call, and the states calls run in. A call
//! takes an idle state (or makes one) and puts it back after, so that calls from several
//! threads run at once, each sized against the memory budget as a lone call is. There are at
//! most as many states as CPU threads asked for: past that, a call waits for a state, so the
//! scratch held at once is at most that many calls' worth.

use crate::cpu::{pool, CpuModel, CpuState};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

pub(super) struct Cpu {
    pub(super) model: Arc<CpuModel>,
    states: Mutex<States>,
    returned: Condvar,
    made: AtomicUsize,
    #[cfg(any(test, feature = "test-hooks"))]
    pub(super) meeting: super::test_hooks::Meeting,
}

#[derive(Default)]
struct States {
    idle: Vec<CpuState>,
    /// States that exist: idle or held by a call.
    live: usize,
}

/// A state held by a call: back to the idle ones when the call returns; dropped, its place
/// freed, when the call panicked.
struct Lease<'a> {
    cpu: &'a Cpu,
    state: Option<CpuState>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut states = self.cpu.lock();
        match self.state.take() {
            Some(state) if !std::thread::panicking() => states.idle.push(state),
            _ => states.live -= 1,
        }
        self.cpu.returned.notify_one();
    }
}

impl Cpu {
    pub(super) fn new(model: CpuModel) -> Self {
        Cpu {
            model: Arc::new(model),
            states: Mutex::default(),
            returned: Condvar::new(),
            made: AtomicUsize::new(0),
            #[cfg(any(test, feature = "test-hooks"))]
            meeting: Default::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, States> {
        self.states.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `call` with the model and a state no other call holds meanwhile.
    pub(super) fn call<R>(&self, call: impl FnOnce(&CpuModel, &mut CpuState) -> R) -> R {
        let mut lease = Lease {
            cpu: self,
            state: Some(self.take()),
        };
        #[cfg(any(test, feature = "test-hooks"))]
        self.meeting.meet();
        call(
            &self.model,
            lease.state.as_mut().expect("held until dropped"),
        )
    }

    /// An idle state, or a new one while fewer than the threads asked for exist; else waits
    /// for one to come back.
    fn take(&self) -> CpuState {
        let mut states = self.lock();
        loop {
            if let Some(state) = states.idle.pop() {
                return state;
            }
            if states.live < pool::wanted().max(1) {
                states.live += 1;
                self.made.fetch_add(1, Relaxed);
                return CpuState::new(&self.model);
            }
            states = (self.returned.wait(states)).unwrap_or_else(|p| p.into_inner());
        }
    }

    #[cfg(any(test, feature = "test-hooks"))]
    /// States made so far: the most calls that have run on the CPU at once.
    pub(super) fn states_made(&self) -> usize {
        self.made.load(Relaxed)
    }
}
