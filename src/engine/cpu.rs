//! The engine's CPU side: one model shared by every call, and the states calls run in. A call
//! takes an idle state (or makes one) and puts it back after, so that calls from several
//! threads run at once, each sized against the memory budget as a lone call is.

use crate::cpu::{CpuModel, CpuState};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

pub(super) struct Cpu {
    pub(super) model: Arc<CpuModel>,
    idle: Mutex<Vec<CpuState>>,
    made: AtomicUsize,
    #[cfg(any(test, feature = "test-hooks"))]
    pub(super) meeting: super::test_hooks::Meeting,
}

impl Cpu {
    pub(super) fn new(model: CpuModel) -> Self {
        Cpu {
            model: Arc::new(model),
            idle: Mutex::new(Vec::new()),
            made: AtomicUsize::new(0),
            #[cfg(any(test, feature = "test-hooks"))]
            meeting: Default::default(),
        }
    }

    /// Runs `call` with the model and a state no other call holds meanwhile. A state whose
    /// call panicked is dropped, not reused.
    pub(super) fn call<R>(&self, call: impl FnOnce(&CpuModel, &mut CpuState) -> R) -> R {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut state = idle.unwrap_or_else(|| {
            self.made.fetch_add(1, Relaxed);
            CpuState::new(&self.model)
        });
        #[cfg(any(test, feature = "test-hooks"))]
        self.meeting.meet();
        let out = call(&self.model, &mut state);
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(state);
        out
    }

    #[cfg(any(test, feature = "test-hooks"))]
    /// States made so far: the most calls that have run on the CPU at once.
    pub(super) fn states_made(&self) -> usize {
        self.made.load(Relaxed)
    }
}
