//! Hooks that break an engine on purpose, for the tests of its recovery.

use super::Engine;
use crate::error::Result;
use crate::gpu::GpuExecutor;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

impl Engine {
    /// Makes the next GPU call fail as if the device were lost (tests of the fallback).
    pub fn lose_gpu_for_test(&self) {
        if let Some(g) = self.gpu.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            g.exec.destroy_device();
        }
    }

    /// Makes the GPU device go lost with a submission in flight, after `after` more submissions
    /// (a forward is one, or one per part of a batch too large to bind): a loss in the middle of
    /// a call.
    pub fn lose_gpu_during_forward_for_test(&self, after: usize) {
        if let Some(g) = self.gpu.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            g.exec.destroy_device_during_submission(after);
        }
    }

    /// Rounds the GPU's timestamps down to multiples of `ms`, as browsers do, so that timing
    /// GEMM tilings repeats its candidates as it must there.
    pub fn round_gpu_timestamps_for_test(&self, ms: f64) {
        self.with_gpu_for_test(|exec| exec.round_timestamps_for_test(ms));
    }

    /// Starts timing the prefetch choice as WebAssembly does at load (natively the CPU's
    /// choice stands), where the model has f32 linears and nothing set the choice.
    pub fn start_prefetch_trial_for_test(&self) {
        self.cpu.start_trial();
    }

    /// Sets whether the f32 GEMMs prefetch the weights ahead (`None`: as the CPU wants), and
    /// stops timing that choice.
    pub fn set_weight_prefetch_for_test(&self, on: Option<bool>) {
        self.cpu.end_trial();
        crate::cpu::gemm::set_prefetch(on);
    }

    /// Applies a test hook to the GPU executor, where there is one.
    fn with_gpu_for_test(&self, hook: impl FnOnce(&mut GpuExecutor)) {
        if let Some(g) = self.gpu.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            hook(&mut g.exec);
        }
    }

    /// Pretends the GPU offers cooperative matrices that compute wrong answers, which their
    /// check on the device must catch before a forward uses them.
    pub fn fail_gpu_coop_check_for_test(&self) {
        self.with_gpu_for_test(|exec| exec.fail_coop_check_for_test());
    }

    /// Pretends the GPU offers cooperative matrices whose shader the device refuses: that must
    /// turn them off, not count as the device failing.
    pub fn refuse_gpu_coop_shader_for_test(&self) {
        self.with_gpu_for_test(|exec| exec.refuse_coop_shader_for_test());
    }

    /// The cooperative-matrix check's verdict on a stand-in (the tiled f16 GEMM on 16-row
    /// tiles; on another layer's weights when `wrong`): `None` when it agrees with the 64-row
    /// one, else why not.
    #[allow(clippy::await_holding_lock)]
    pub async fn check_gpu_gemm_for_test(&self, wrong: bool) -> Result<Option<String>> {
        let dims = self.probe_batch(8).dims();
        let gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        let Some(g) = gpu.as_ref() else {
            return Ok(None);
        };
        g.exec.check_gemm_for_test(dims, wrong).await
    }

    /// Makes the GPU device refuse the timing of GEMM tilings, as a driver might.
    pub fn refuse_gpu_timing_for_test(&self) {
        self.with_gpu_for_test(|exec| exec.refuse_timing_for_test());
    }

    /// Makes the next forward pass panic, as a bug inside a call would (tests of the recovery
    /// from a trapped WebAssembly instance).
    pub fn panic_in_next_forward_for_test(&self) {
        self.panic_next
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Where CPU calls wait for each other (armed by [`Engine::meet_in_cpu_calls_for_test`]):
/// each holds its state until `calls` calls hold theirs, so that a test sees them overlap
/// without timing them.
#[derive(Default)]
pub(super) struct Meeting {
    /// Calls to wait for, and calls arrived so far.
    counts: Mutex<(usize, usize)>,
    all_here: Condvar,
}

/// How long a call waits for the others before it gives up and runs alone (calls that
/// cannot overlap then show as fewer states, not as a hung test).
const MEETING_TIMEOUT: Duration = Duration::from_secs(30);

impl Meeting {
    pub(super) fn meet(&self) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if counts.1 >= counts.0 {
            return;
        }
        counts.1 += 1;
        self.all_here.notify_all();
        let waiting = |c: &mut (usize, usize)| c.1 < c.0;
        drop(
            self.all_here
                .wait_timeout_while(counts, MEETING_TIMEOUT, waiting),
        );
    }
}

impl Engine {
    /// Makes the next `calls` CPU calls wait, each holding its state, until all of them have
    /// started (or [`MEETING_TIMEOUT`] passed): calls from that many threads must then run at
    /// once, on that many states.
    pub fn meet_in_cpu_calls_for_test(&self, calls: usize) {
        *self.cpu.meeting.counts.lock().unwrap() = (calls, 0);
    }

    /// CPU states this engine has made: the most calls that have run on the CPU at once.
    pub fn cpu_states_made_for_test(&self) -> usize {
        self.cpu.states_made()
    }
}
