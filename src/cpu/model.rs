//! What a loaded model is on the CPU: the plan, the kernel chosen for this machine and the
//! weights, packed once. Immutable after load, so that any number of calls share one (each with
//! its own [`CpuState`](super::state::CpuState)).

use super::gemm::PackedB;
use super::qpack::PackedQ;
use super::tile::{Kernel, QKernel};
use crate::exec::Quantized;
use crate::model::{Plan, Quant, Tensor, WeightId, WeightUse};
use std::sync::Arc;

/// A linear weight in the layout of the kernel that multiplies it.
pub(super) enum Packed {
    F32(PackedB),
    /// Block-quantized (q4) codes for the kernel's `quant` tile.
    Int(PackedQ),
    /// Per-channel 8-bit (q8) codes for one of the kernel's `q8` tiles.
    Q8(&'static QKernel, PackedQ),
}

pub struct CpuModel {
    pub(super) plan: Arc<Plan>,
    pub(super) kernel: &'static Kernel,
    /// Tensors read as they are (tables, biases, norms), by `WeightId`; those that only served
    /// as GEMM operands are left empty once packed, so weights are held once.
    pub(super) weights: Vec<Tensor>,
    /// Linear weights in the layout of the kernel that multiplies them, by `WeightId`.
    pub(super) packed: Vec<Option<Packed>>,
    /// Whether quantized weights were packed for the integer tiles.
    pub(super) quantized: Quantized,
    /// Bytes the activation buffers and scratch of one call may take (see `model::budget`).
    pub(super) budget: u64,
    /// Unique in the process ([`CpuModel::next_id`]): an image cursor names the model it
    /// belongs to.
    pub(super) id: u64,
}

impl CpuModel {
    /// Packs every linear weight of `plan` for `kernel` (see [`super::kernels::select`]).
    pub fn new(
        plan: Arc<Plan>,
        mut weights: Vec<Tensor>,
        kernel: &'static Kernel,
        quantized: Quantized,
    ) -> Self {
        let uses: Vec<_> = plan.ops.iter().flat_map(|op| op.weights()).collect();
        let linear = uses.iter().filter(|u| u.1 == WeightUse::Gemm).map(|u| u.0);
        let read: Vec<WeightId> = (uses.iter())
            .filter(|u| u.1 != WeightUse::Gemm)
            .map(|u| u.0)
            .collect();
        let mut packed: Vec<Option<Packed>> = (0..weights.len()).map(|_| None).collect();
        for id in linear {
            if packed[id.0].is_some() {
                continue;
            }
            let t = &weights[id.0];
            let (n, k) = (t.shape[0], t.shape[1]);
            let int = match (t.quant.as_deref(), quantized) {
                (Some(Quant::Block(q)), Quantized::Int) => kernel
                    .quant
                    .and_then(|qk| PackedQ::new(qk, n, k, q))
                    .map(Packed::Int),
                (Some(Quant::Channel(q)), Quantized::Int) => (kernel.q8.iter())
                    .find_map(|&qk| PackedQ::channel(qk, n, k, q).map(|p| Packed::Q8(qk, p))),
                _ => None,
            };
            packed[id.0] = Some(match int {
                Some(p) => p,
                None => Packed::F32(PackedB::from_nk(kernel, n, k, &t.data, k)),
            });
            if !read.contains(&id) {
                weights[id.0] = Tensor::new(vec![0], Vec::new());
            }
        }
        CpuModel {
            plan,
            kernel,
            weights,
            packed,
            quantized,
            budget: u64::MAX,
            id: Self::next_id(),
        }
    }

    pub(super) fn next_id() -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Refuses calls whose activation buffers would take more than `bytes`
    /// ([`Error::Budget`](crate::Error::Budget)) before sizing them.
    pub fn set_budget(&mut self, bytes: u64) {
        self.budget = bytes;
    }

    pub fn kernel_name(&self) -> &'static str {
        self.kernel.name
    }

    /// The kernel the weights were packed for.
    pub fn kernel(&self) -> &'static Kernel {
        self.kernel
    }

    /// The integer tile that multiplies quantized weights, when any are packed for one (the
    /// first weight's, where q8 weights went to more than one).
    pub fn int_kernel_name(&self) -> Option<&'static str> {
        self.int_kernel_names().first().copied()
    }

    /// Whether some linear multiplies f32 weights (the GEMMs that may prefetch them).
    pub fn has_f32_linears(&self) -> bool {
        (self.packed.iter().flatten()).any(|p| matches!(p, Packed::F32(_)))
    }

    /// Every integer tile some weight is packed for, in the order of the weights.
    pub fn int_kernel_names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        for p in self.packed.iter().flatten() {
            let name = match p {
                Packed::Int(_) => self.kernel.quant.map(|q| q.name),
                Packed::Q8(qk, _) => Some(qk.name),
                Packed::F32(_) => None,
            };
            if let Some(name) = name.filter(|n| !names.contains(n)) {
                names.push(name);
            }
        }
        names
    }
}
