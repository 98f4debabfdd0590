//! Calls on a [`CpuModel`]: a forward pass, its profile, and the head alone, each in a
//! [`CpuState`] of the caller's.

use super::gemm;
use super::model::{CpuModel, Packed};
use super::pool;
use super::prefetch_trial::{PrefetchChoice, PrefetchTrial};
use super::state::CpuState;
use crate::error::{Error, Result};
use crate::exec::{Batch, Output, Want};
use crate::model::Op;

impl CpuModel {
    /// Runs the encoder, and the task head when `want` asks for logits.
    pub fn forward(&self, state: &mut CpuState, batch: &Batch, want: Want) -> Result<Output> {
        self.forward_by(state, batch, want, |state, i| self.run(state, i, batch))
    }

    /// [`Self::forward`] as a forward of `trial`: its f32 linears alternate prefetching the
    /// weights ahead or not, timed by `now_ms`; the choice once the trial has made it.
    pub fn trial_forward(
        &self,
        state: &mut CpuState,
        batch: &Batch,
        want: Want,
        trial: &mut PrefetchTrial,
        now_ms: impl Fn() -> f64,
    ) -> Result<(Output, Option<PrefetchChoice>)> {
        let before = PrefetchRestore(gemm::prefetch_override());
        let mut seen: Vec<(usize, usize)> = Vec::new();
        let mut ms = [0.0; 2];
        let out = self.forward_by(state, batch, want, |state, i| {
            let Op::Linear { linear, .. } = &self.plan.ops[i] else {
                return self.run(state, i, batch);
            };
            if !matches!(self.packed[linear.weight.0], Some(Packed::F32(_))) {
                return self.run(state, i, batch);
            }
            let shape = (linear.n_in, linear.n_out);
            let nth = seen.iter().filter(|s| **s == shape).count();
            seen.push(shape);
            let touches = trial.touches(nth);
            gemm::set_prefetch(Some(touches));
            let t = now_ms();
            self.run(state, i, batch);
            ms[touches as usize] += now_ms() - t;
        })?;
        drop(before);
        Ok((out, trial.record(ms)))
    }

    /// Runs the encoder's ops (and the head's `want` asks for) with `run` and copies out the
    /// results.
    fn forward_by(
        &self,
        state: &mut CpuState,
        batch: &Batch,
        want: Want,
        mut run: impl FnMut(&mut CpuState, usize),
    ) -> Result<Output> {
        state.size(self, batch)?;
        let plan = &self.plan;
        let head = want.head_index().and_then(|i| plan.head(i));
        let head_ops = head.map_or(0..0, |h| h.ops.clone());
        for i in (0..plan.encoder_ops).chain(head_ops) {
            run(state, i);
        }
        pool::rest();
        let copy = |b: &[f32], what: &str| -> Result<Vec<f32>> {
            let mut v = crate::model::budget::try_vec(b.len(), what)?;
            v.extend_from_slice(b);
            Ok(v)
        };
        Ok(Output {
            hidden: (want.hidden())
                .then(|| copy(&state.bufs[plan.hidden.0], "the hidden states"))
                .transpose()?,
            logits: head
                .map(|h| copy(&state.bufs[h.logits.0], "the logits"))
                .transpose()?,
        })
    }

    /// Milliseconds per kind of op summed over one forward pass (encoder and head), read
    /// from `now_ms` (the caller's clock: `Instant` is unavailable in browsers).
    pub fn profile(
        &self,
        state: &mut CpuState,
        batch: &Batch,
        now_ms: impl Fn() -> f64,
    ) -> Result<Vec<(String, f64)>> {
        state.size(self, batch)?;
        let mut totals: Vec<(String, f64)> = Vec::new();
        let plan = &self.plan;
        let head_ops = plan.head(0).map_or(0..0, |h| h.ops.clone());
        for i in (0..plan.encoder_ops).chain(head_ops) {
            let t = now_ms();
            self.run(state, i, batch);
            let ms = now_ms() - t;
            let kind = self.op_kind(i);
            match totals.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, total)) => *total += ms,
                None => totals.push((kind, ms)),
            }
        }
        pool::rest();
        Ok(totals)
    }

    fn op_kind(&self, i: usize) -> String {
        match &self.plan.ops[i] {
            Op::Embeddings { .. } => "embeddings".into(),
            Op::Attention {
                bias,
                relative,
                window,
                ..
            } => match (bias, relative, window) {
                (Some(_), ..) => "attention + distance bias".into(),
                (_, Some(_), _) => "attention + disentangled terms".into(),
                (.., Some(_)) => "attention, sliding window".into(),
                _ => "attention".into(),
            },
            Op::Gate { act, .. } => format!("gate {act:?}"),
            Op::Rotary { .. } => "rotary".into(),
            Op::Norm { .. } => "layer norm".into(),
            Op::MeanPool { .. } => "mean pool".into(),
            Op::Gather { .. } => "gather".into(),
            Op::Linear {
                linear, act, norm, ..
            } => {
                let gemm = match self.packed[linear.weight.0] {
                    Some(Packed::Int(_)) => "int",
                    Some(Packed::Q8(..)) => "q8",
                    _ => "f32",
                };
                let tail = if norm.is_some() { " + add & norm" } else { "" };
                format!(
                    "linear {}x{} {gemm} {act:?}{tail}",
                    linear.n_in, linear.n_out
                )
            }
        }
    }

    /// Runs only the task head over `hidden`, the last hidden state of `batch` (a head on the
    /// CPU after a GPU encoder; see docs/performance.md, GPU).
    pub fn head(
        &self,
        state: &mut CpuState,
        batch: &Batch,
        hidden: &[f32],
    ) -> Result<Option<Vec<f32>>> {
        state.size(self, batch)?;
        let h = &mut state.bufs[self.plan.hidden.0];
        if h.len() != hidden.len() {
            return Err(Error::Input(format!(
                "{} hidden values for a batch of {}",
                hidden.len(),
                h.len()
            )));
        }
        h.copy_from_slice(hidden);
        let Some(head) = self.plan.head(0) else {
            return Ok(None);
        };
        for i in head.ops.clone() {
            self.run(state, i, batch);
        }
        pool::rest();
        Ok(Some(state.bufs[head.logits.0].clone()))
    }
}

/// Puts back the prefetch override a trial forward found, also when the forward fails.
struct PrefetchRestore(Option<bool>);

impl Drop for PrefetchRestore {
    fn drop(&mut self) {
        gemm::set_prefetch(self.0);
    }
}
