//! The engine's CPU side: one model shared by every call, and the states calls run in. A call
//! takes an idle state (or makes one) and puts it back after, so that calls from several
//! threads run at once, each sized against the memory budget as a lone call is. There are at
//! most as many states as CPU threads asked for: past that, a call waits for a state, so the
//! scratch held at once is at most that many calls' worth.

use super::clock::now_ms;
use crate::cpu::{gemm, pool, prefetch_trial, CpuModel, CpuState, PrefetchChoice, PrefetchTrial};
use crate::error::Result;
use crate::exec::{Batch, Output, Want};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

pub(super) struct Cpu {
    pub(super) model: Arc<CpuModel>,
    states: Mutex<States>,
    returned: Condvar,
    made: AtomicUsize,
    /// Prefetching the weights ahead, chosen by timing forwards (see [`PrefetchTrial`]):
    /// while it is being timed, and how it ended.
    trial: Mutex<Trial>,
    #[cfg(any(test, feature = "test-hooks"))]
    pub(super) meeting: super::test_hooks::Meeting,
}

#[derive(Debug, Clone)]
pub(super) enum Trial {
    /// Not timed: the CPU's choice (natively), or one made before in this instance.
    Untimed,
    Timing(PrefetchTrial),
    Chosen(PrefetchChoice),
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
        let cpu = Cpu {
            model: Arc::new(model),
            states: Mutex::default(),
            returned: Condvar::new(),
            made: AtomicUsize::new(0),
            trial: Mutex::new(Trial::Untimed),
            #[cfg(any(test, feature = "test-hooks"))]
            meeting: Default::default(),
        };
        // WebAssembly cannot ask what the CPU is, so it times the choice; once per instance,
        // as the choice holds for every model after.
        if cfg!(all(target_arch = "wasm32", target_os = "unknown")) {
            cpu.start_trial();
        }
        cpu
    }

    /// Starts timing the prefetch choice, where this model has f32 linears and nothing has
    /// set the choice yet.
    pub(super) fn start_trial(&self) {
        if self.model.has_f32_linears() && gemm::prefetch_override().is_none() {
            *self.trial.lock().unwrap_or_else(|p| p.into_inner()) =
                Trial::Timing(PrefetchTrial::default());
        }
    }

    /// Stops timing the prefetch choice (the choice is set by hand).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(super) fn end_trial(&self) {
        *self.trial.lock().unwrap_or_else(|p| p.into_inner()) = Trial::Untimed;
    }

    /// Where the prefetch choice stands.
    pub(super) fn trial(&self) -> Trial {
        self.trial.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A forward pass, one of the prefetch trial's while it is timing.
    pub(super) fn forward(&self, batch: &Batch, want: Want) -> Result<Output> {
        let short = batch.ids.len() <= prefetch_trial::MAX_ROWS;
        let timing = short.then(|| {
            let mut trial = self.trial.lock().unwrap_or_else(|p| p.into_inner());
            match std::mem::replace(&mut *trial, Trial::Untimed) {
                Trial::Timing(t) => Some(t),
                other => {
                    *trial = other;
                    None
                }
            }
        });
        // Long calls, and calls at the same time as a trial forward (which holds the trial
        // meanwhile), run untimed.
        let Some(mut timing) = timing.flatten() else {
            return self.call(|model, state| model.forward(state, batch, want));
        };
        let out =
            self.call(|model, state| model.trial_forward(state, batch, want, &mut timing, now_ms));
        let next = match out.as_ref().ok().and_then(|(_, choice)| *choice) {
            Some(choice) => {
                gemm::set_prefetch(Some(choice.prefetch));
                Trial::Chosen(choice)
            }
            None => Trial::Timing(timing),
        };
        *self.trial.lock().unwrap_or_else(|p| p.into_inner()) = next;
        out.map(|(out, _)| out)
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
