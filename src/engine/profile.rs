//! Where a forward pass spends its time: per GPU kernel, per kind of CPU op, the head alone,
//! and the GEMM tilings the GPU chose.

use super::clock::now_ms;
use super::cpu::Trial;
use super::Engine;
use crate::cpu::{gemm, pool};
use crate::error::Result;
use crate::exec::Want;
use tokenizers::Encoding;

impl Engine {
    /// Bytes of packed linear weights a CPU forward reads (the encoder's, each once).
    pub fn cpu_weight_bytes(&self) -> usize {
        self.cpu.model.encoder_weight_bytes()
    }

    /// This machine's single-thread read bandwidth in GB/s, summing a buffer of `bytes`
    /// (well over the last-level cache) at best of five.
    pub fn read_bandwidth_gb_per_s(bytes: usize) -> f64 {
        crate::cpu::bandwidth::stream_read_gb_per_s(bytes, 5, now_ms)
    }

    /// The GPU's tiling of each GEMM of a forward over `windows` (empty on the CPU).
    pub fn gpu_gemm_plans(&self, windows: &[Encoding]) -> Vec<String> {
        let batch = self.pad(windows, &[]);
        let gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        (gpu.as_ref()).map_or_else(Vec::new, |g| g.exec.gemm_plans(batch.dims()))
    }

    /// The GEMM tilings the GPU timed so far, a line per shape with each candidate's GPU ms
    /// (empty on the CPU or when tilings go by rule).
    pub fn gpu_gemm_timings(&self) -> Vec<String> {
        let gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        (gpu.as_ref()).map_or_else(Vec::new, |g| g.exec.gemm_timings())
    }

    /// Per-kernel GPU milliseconds for one forward over `windows` (padded as `run` pads them),
    /// with the task head's as `head` when `want` runs it, when the model runs on a GPU with
    /// timestamp queries.
    #[allow(clippy::await_holding_lock)]
    pub async fn gpu_profile(
        &self,
        windows: &[Encoding],
        want: Want,
    ) -> Result<Option<Vec<(&'static str, f64)>>> {
        let batch = self.pad(windows, &[]);
        let mut gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        match gpu.as_mut() {
            Some(g) => g.exec.profile(&batch, want).await,
            None => Ok(None),
        }
    }

    /// One CPU forward over `windows`, its results dropped: the warm-up's (which also times
    /// the prefetch choice while that is open; see [`Self::weight_prefetch`]).
    pub fn cpu_warm_up(&self, windows: &[Encoding]) -> Result<()> {
        let batch = self.pad(windows, &[]);
        self.cpu.forward(&batch, Want::Hidden).map(drop)
    }

    /// Whether the f32 GEMMs prefetch the weights ahead and why: `on`/`off`, as the CPU
    /// wants, timed (with the time without ÷ the time with), still being timed, or set before
    /// this model (by hand, or timed with an earlier model of this instance).
    pub fn weight_prefetch(&self) -> String {
        let now = if gemm::prefetch_chosen() { "on" } else { "off" };
        match self.cpu.trial() {
            Trial::Timing(t) => format!("{now}, being timed ({} pairs so far)", t.pairs()),
            Trial::Chosen(c) => format!("{now}, timed: {:.3} of the time without", c.ratio),
            Trial::Untimed if gemm::prefetch_override().is_some() => {
                format!("{now}, set before this model")
            }
            Trial::Untimed => format!("{now}, as the CPU wants"),
        }
    }

    /// Milliseconds per kind of op of one CPU forward over `windows` (encoder and head).
    pub fn cpu_profile(&self, windows: &[Encoding]) -> Result<Vec<(String, f64)>> {
        let batch = self.pad(windows, &[]);
        pool::take_stats();
        let mut kinds = (self.cpu).call(|model, state| model.profile(state, &batch, now_ms))?;
        if pool::threads() > 1 {
            let [mine, theirs, spins, loops, idle_spins] = pool::take_stats();
            kinds.push(("pool: tasks run by the caller".into(), mine as f64));
            kinds.push(("pool: tasks run by helpers".into(), theirs as f64));
            kinds.push(("pool: parallel loops".into(), loops as f64));
            kinds.push(("pool: caller's spins waiting".into(), spins as f64));
            kinds.push((
                "pool: helpers' spins between loops".into(),
                idle_spins as f64,
            ));
        }
        Ok(kinds)
    }

    /// Wall-clock milliseconds (best of `runs`) of the task head alone on the CPU, over the
    /// hidden state of `windows`: what a GPU encoder plus a CPU head would spend on the head.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn cpu_head_ms(&self, windows: &[Encoding], runs: usize) -> Result<f64> {
        let batch = self.pad(windows, &[]);
        self.cpu.call(|model, state| {
            let hidden = (model.forward(state, &batch, Want::Hidden)?.hidden).unwrap_or_default();
            let mut best = f64::INFINITY;
            for _ in 0..runs.max(1) {
                let t = std::time::Instant::now();
                model.head(state, &batch, &hidden)?;
                best = best.min(t.elapsed().as_secs_f64() * 1e3);
            }
            Ok(best)
        })
    }

    /// The hidden state of one window on the CPU executor, whatever the backend: what `bench`
    /// checks the GPU's against.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn cpu_hidden(&self, window: &Encoding) -> Result<Vec<f32>> {
        let batch = self.pad(std::slice::from_ref(window), &[]);
        let forward = self
            .cpu
            .call(|model, state| model.forward(state, &batch, Want::Hidden));
        let mut hidden = forward?.hidden.unwrap_or_default();
        hidden.truncate(window.len() * self.config.hidden_size);
        Ok(hidden)
    }
}
