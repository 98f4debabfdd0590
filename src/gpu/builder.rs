//! What builds a bucket's dispatches: the executor's device, plan, weights and timed tilings.
//! Its methods are in the files of their jobs: `bucket.rs` (a whole bucket), `op_steps.rs`
//! (each op's dispatches), `gemm_steps.rs` (a GEMM's), `gemm_trials.rs` (GEMMs run alone, for
//! timing and checks) and `recorder.rs` (bind groups).

use super::context::KernelChoice;
use super::pipelines::Pipelines;
use super::tune::{GemmKey, Tuned};
use super::weights::GpuWeight;
use crate::model::Plan;
use std::collections::HashMap;

pub struct Builder<'a> {
    pub device: &'a wgpu::Device,
    pub queue: &'a wgpu::Queue,
    pub pipelines: &'a Pipelines,
    pub plan: &'a Plan,
    pub weights: &'a [GpuWeight],
    pub dummy: &'a wgpu::Buffer,
    pub choice: &'a KernelChoice,
    /// Tilings timed on this device, by shape (`tune.rs`).
    pub tuned: &'a HashMap<GemmKey, Tuned>,
}
