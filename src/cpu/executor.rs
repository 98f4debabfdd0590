//! One model with one state of its own, for callers that make one call at a time (tests,
//! examples); the engine shares its model between states instead.

use super::model::CpuModel;
use super::state::CpuState;
use super::tile::Kernel;
use crate::error::Result;
use crate::exec::{Batch, Output, Quantized, Want};
use crate::model::{Plan, Tensor};
use std::sync::Arc;

pub struct CpuExecutor {
    pub model: CpuModel,
    pub state: CpuState,
}

impl CpuExecutor {
    /// Packs every linear weight of `plan` for `kernel` (see [`CpuModel::new`]).
    pub fn new(
        plan: Arc<Plan>,
        weights: Vec<Tensor>,
        kernel: &'static Kernel,
        quantized: Quantized,
    ) -> Self {
        let model = CpuModel::new(plan, weights, kernel, quantized);
        let state = CpuState::new(&model);
        CpuExecutor { model, state }
    }

    /// See [`CpuModel::set_budget`].
    pub fn set_budget(&mut self, bytes: u64) {
        self.model.set_budget(bytes);
    }

    pub fn kernel_name(&self) -> &'static str {
        self.model.kernel_name()
    }

    /// See [`CpuModel::int_kernel_name`].
    pub fn int_kernel_name(&self) -> Option<&'static str> {
        self.model.int_kernel_name()
    }

    /// See [`CpuModel::int_kernel_names`].
    pub fn int_kernel_names(&self) -> Vec<&'static str> {
        self.model.int_kernel_names()
    }

    /// See [`CpuModel::forward`].
    pub fn forward(&mut self, batch: &Batch, want: Want) -> Result<Output> {
        self.model.forward(&mut self.state, batch, want)
    }

    /// See [`CpuModel::profile`].
    pub fn profile(
        &mut self,
        batch: &Batch,
        now_ms: impl Fn() -> f64,
    ) -> Result<Vec<(String, f64)>> {
        self.model.profile(&mut self.state, batch, now_ms)
    }

    /// See [`CpuModel::head`].
    pub fn head(&mut self, batch: &Batch, hidden: &[f32]) -> Result<Option<Vec<f32>>> {
        self.model.head(&mut self.state, batch, hidden)
    }

    /// See [`CpuModel::encoder_weight_bytes`].
    pub fn encoder_weight_bytes(&self) -> usize {
        self.model.encoder_weight_bytes()
    }
}
