//! What one call uses on the CPU: the activation buffers and every scratch the kernels write.
//! Each call runs with a state of its own, so calls on one [`CpuModel`] never wait on each
//! other's scratch.

use super::attention::{self, AttentionScratch};
use super::model::CpuModel;
use super::pool;
use super::quantize::{QScratch, RowGroup};
use crate::error::Result;
use crate::exec::Batch;
use crate::model::{budget, Rows};

pub struct CpuState {
    /// The plan's buffers, by `BufferId`, sized for the current batch.
    pub(super) bufs: Vec<Vec<f32>>,
    pub(super) attn: AttentionScratch,
    pub(super) a_pack: Vec<f32>,
    pub(super) a_quant: QScratch,
    pub(super) groups: Vec<RowGroup>,
    /// This call's rows of rotary angles under dynamic scaling (every layer turns by the
    /// same ones), made by the first layer that needs them.
    pub(super) rotary_rows: Option<Vec<f32>>,
}

impl CpuState {
    /// An empty state for calls on `model`: its buffers grow with the first batch.
    pub fn new(model: &CpuModel) -> Self {
        CpuState {
            bufs: vec![Vec::new(); model.plan.buffers.len()],
            attn: AttentionScratch::default(),
            a_pack: Vec::new(),
            a_quant: QScratch::default(),
            groups: Vec::new(),
            rotary_rows: None,
        }
    }

    /// Checks `batch` and sizes the activation buffers for it: within the model's budget (the
    /// buffers, a copy of the hidden states and the attention scratch), allocated fallibly.
    pub(super) fn size(&mut self, model: &CpuModel, batch: &Batch) -> Result<()> {
        let plan = &model.plan;
        batch.check(&plan.config)?;
        self.rotary_rows = None;
        let dims = batch.dims();
        let lens: Option<Vec<usize>> = (plan.buffers.iter())
            .map(|spec| dims.rows(spec.rows).checked_mul(spec.cols))
            .collect();
        let cfg = &plan.config;
        let hidden = dims.rows(Rows::Tokens) as u64 * cfg.hidden_size as u64;
        let scratch = attention::scratch_bytes(dims.seq_len, cfg.head_dim())
            .checked_mul(pool::threads().min(pool::MAX_WORKERS) as u64);
        let total = (lens.as_ref())
            .and_then(|l| l.iter().try_fold(hidden, |s, &n| s.checked_add(n as u64)))
            .and_then(|n| n.checked_mul(4))
            .zip(scratch)
            .and_then(|(n, s)| n.checked_add(s));
        let what = || {
            format!(
                "the activations of a batch of {} sequences of {} tokens",
                dims.batch, dims.seq_len
            )
        };
        budget::check(what, total, model.budget)?;
        let lens = lens.unwrap_or_default();
        for ((buf, spec), n) in self.bufs.iter_mut().zip(&plan.buffers).zip(lens) {
            budget::try_grow(buf, n, &format!("the `{}` buffer", spec.name))?;
            buf.resize(n, 0.0);
        }
        Ok(())
    }
}
