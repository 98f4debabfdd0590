//! The `auto` device's choice at load: one window timed on the GPU and on the CPU, and the
//! GPU kept only when it is faster and agrees with the CPU.

use super::clock::now_ms;
use super::cpu::Cpu;
use super::probe::{gpu_is_faster, Probe, PROBE_TOKENS};
use super::Engine;
use crate::error::Result;
use crate::exec::{Batch, Output, Want};
use crate::gpu::GpuExecutor;
use crate::model::Rows;

impl Engine {
    /// What the probe's forwards ask for: the hidden state (compared), and the head's logits
    /// where there is a head (what tasks read).
    fn probe_want(&self) -> Want {
        match self.plan.heads.is_empty() {
            false => Want::Both,
            true => Want::Hidden,
        }
    }

    /// Times one window on the GPU and on the CPU, and gives the GPU up (freeing its
    /// memory) unless it is faster and its hidden state agrees with the CPU's. A GPU error
    /// here counts as a failure under auto.
    pub(super) async fn probe_backends(&mut self) {
        let tokens = self.max_len().min(PROBE_TOKENS);
        if tokens == 0 || !self.has_gpu() {
            return;
        }
        let batch = self.probe_batch(tokens);
        let want = self.probe_want();
        let cpu_backend = format!("cpu-{}", self.kernel);
        let last_backend = self
            .last_backend
            .get_mut()
            .unwrap_or_else(|p| p.into_inner());
        let gpu = self.gpu.get_mut().unwrap_or_else(|p| p.into_inner());
        let Some(g) = gpu.as_mut() else { return };
        let (gpu_ms, gpu_out) = match best_gpu_ms(&mut g.exec, &batch, want).await {
            Ok(timed) => timed,
            Err(e) => {
                g.failed = Some(e.to_string());
                *last_backend = cpu_backend;
                return;
            }
        };
        let adapter = g.exec.adapter_name();
        let cpu = &self.cpu;
        let Ok((mut cpu_ms, cpu_out)) = cpu_ms_of(cpu, &batch, want) else {
            return; // the CPU path itself fails: the GPU stays
        };
        let agreement = centred_cosine(
            gpu_out.hidden.as_deref().unwrap_or_default(),
            cpu_out.hidden.as_deref().unwrap_or_default(),
            self.config.hidden_size,
        );
        if gpu_is_faster(gpu_ms, cpu_ms) {
            // That CPU run was the first (cold): one more before the GPU wins.
            if let Ok((again, _)) = cpu_ms_of(cpu, &batch, want) {
                cpu_ms = cpu_ms.min(again);
            }
        }
        let probe = Probe {
            adapter,
            tokens,
            gpu_ms,
            cpu_ms,
            agreement,
        };
        if !probe.gpu_wins() {
            *gpu = None;
            *last_backend = cpu_backend;
        }
        self.probe = Some(probe);
    }

    /// One window of `n` valid ids: `[CLS]` (when the tokenizer has one), then ordinary ids;
    /// one picked row for heads over picked rows (fill-mask).
    pub(super) fn probe_batch(&self, n: usize) -> Batch {
        let vocab = self.config.vocab_size.max(1);
        let mut ids: Vec<u32> = (0..n).map(|i| ((1000 + i) % vocab) as u32).collect();
        if let Some(cls) = self.tokenizer.cls_id {
            ids[0] = cls;
        }
        let picks = self.plan.logits_rows(0) == Some(Rows::Picked);
        Batch {
            ids,
            type_ids: vec![0; n],
            lens: vec![n],
            seq_len: n,
            picked: if picks { vec![n / 2] } else { Vec::new() },
        }
    }
}

/// Best of two GPU forwards of `batch`, after an untimed warm-up.
/// The best of two timed forwards after a warm-up, and the last one's output.
async fn best_gpu_ms(exec: &mut GpuExecutor, batch: &Batch, want: Want) -> Result<(f64, Output)> {
    let mut out = exec.forward(batch, want).await?;
    let mut best = f64::INFINITY;
    for _ in 0..2 {
        let t = now_ms();
        out = exec.forward(batch, want).await?;
        best = best.min(now_ms() - t);
    }
    Ok((best, out))
}

fn cpu_ms_of(cpu: &Cpu, batch: &Batch, want: Want) -> Result<(f64, Output)> {
    let t = now_ms();
    let out = cpu.call(|model, state| model.forward(state, batch, want))?;
    Ok((now_ms() - t, out))
}

/// The cosine of `a` and `b` (rows of `width` values) once `b`'s mean row is taken from both,
/// so that the direction all of BERT's hidden states share does not count: 1 for the same
/// states, ~0 for unrelated ones; NaN for inputs of different shapes or non-finite values.
fn centred_cosine(a: &[f32], b: &[f32], width: usize) -> f64 {
    if a.len() != b.len() || a.is_empty() || width == 0 || !b.len().is_multiple_of(width) {
        return f64::NAN;
    }
    let rows = b.len() / width;
    let mut mean = vec![0.0f64; width];
    for row in b.chunks(width) {
        for (m, &x) in mean.iter_mut().zip(row) {
            *m += x as f64 / rows as f64;
        }
    }
    let cosine = |mean: &[f64]| {
        let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
        for (ra, rb) in a.chunks(width).zip(b.chunks(width)) {
            for ((&x, &y), m) in ra.iter().zip(rb).zip(mean) {
                let (x, y) = (x as f64 - m, y as f64 - m);
                ab += x * y;
                aa += x * x;
                bb += y * y;
            }
        }
        (ab / (aa * bb).sqrt(), bb)
    };
    let (plain, total) = cosine(&vec![0.0; width]);
    let (centred, varying) = cosine(&mean);
    // Rows all but alike (one row, or a model whose states hardly vary) leave nothing above
    // rounding to compare once centred: then the plain cosine.
    match varying > 1e-4 * total {
        true => centred,
        false => plain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_centred_cosine_ignores_what_all_rows_share() {
        // Two rows of 3 sharing a large common part: the plain cosine of the swapped rows
        // would be ~1, the centred one is -1.
        let b = [10.0, 10.0, 11.0, 10.0, 11.0, 10.0];
        let swapped = [10.0, 11.0, 10.0, 10.0, 10.0, 11.0];
        assert!((centred_cosine(&b, &b, 3) - 1.0).abs() < 1e-12);
        assert!((centred_cosine(&swapped, &b, 3) + 1.0).abs() < 1e-12);
        // One row, or rows all but alike: nothing to centre on, the plain cosine.
        assert!((centred_cosine(&[1.0, 0.0], &[1.0, 1.0], 2) - 0.5f64.sqrt()).abs() < 1e-12);
        let alike = [1.0, 1.0, 1.0, 1.000001];
        assert!(centred_cosine(&[1.0, 1.0, 1.000001, 1.0], &alike, 2) > 0.999);
        assert!(centred_cosine(&[1.0, 2.0], &[1.0, 2.0, 3.0], 1).is_nan());
        assert!(centred_cosine(&[f32::NAN, 2.0], &[1.0, 2.0], 1).is_nan());
    }
}
