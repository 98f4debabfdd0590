//! The GEMMs of a forward: their shapes and tilings, and each one's dispatches (whole, or
//! split-K partial sums then the reduce pass that applies the epilogue).

use super::builder::Builder;
use super::gemm_plan::GemmPlan;
use super::kernels::Kernel;
use super::params::{act_code, GemmParams, GemmReduceParams};
use super::recorder::Recorder;
use super::tune::GemmKey;
use super::weights::{Chunk, GemmWeights};
use super::workgroups::per_element;
use crate::exec::Dims;
use crate::model::{Activation, Linear, Op};

/// One GEMM of a forward: its shape, weights and tiling, and where it comes from (chunk
/// `chunk` of `linear`'s weight).
#[derive(Debug, Clone, Copy)]
pub struct GemmShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub weights: GemmWeights,
    pub plan: GemmPlan,
    pub linear: Linear,
    pub chunk: usize,
}

impl GemmShape {
    pub fn key(&self) -> GemmKey {
        GemmKey::new(self.m, self.n, self.k, self.weights)
    }
}

/// The buffers of one GEMM dispatch: operands, epilogue inputs, output, then what its weight
/// form binds after them (q4 scales and zero points, q8 scales, quantized activations' meta).
pub struct GemmBuffers<'b> {
    pub x: &'b wgpu::Buffer,
    pub w: &'b wgpu::Buffer,
    pub bias: &'b wgpu::Buffer,
    pub residual: &'b wgpu::Buffer,
    pub out: &'b wgpu::Buffer,
    pub extra: Vec<&'b wgpu::Buffer>,
}

impl Builder<'_> {
    /// Every GEMM of a forward of `dims` (one per chunk of a split weight) and its tiling.
    pub fn gemms(&self, dims: Dims) -> Vec<GemmShape> {
        let mut out = Vec::new();
        for op in &self.plan.ops {
            if let Op::Linear { x, linear, .. } = op {
                let m = dims.rows(self.plan.buffers[x.0].rows);
                let weight = &self.weights[linear.weight.0];
                let weights = GemmWeights::of(weight);
                for (chunk, c) in weight.chunks.iter().enumerate() {
                    let (n, k) = (c.rows, linear.n_in);
                    out.push(GemmShape {
                        m,
                        n,
                        k,
                        weights,
                        plan: self.gemm_plan(m, n, k, weights),
                        linear: *linear,
                        chunk,
                    });
                }
            }
        }
        out
    }

    /// A GEMM's tiling: the one timed for its shape, else the rule's.
    pub fn gemm_plan(&self, m: usize, n: usize, k: usize, weights: GemmWeights) -> GemmPlan {
        match self.tuned.get(&GemmKey::new(m, n, k, weights)) {
            Some(t) => t.plan,
            None => GemmPlan::choose(self.choice, m, n, k, weights),
        }
    }

    /// One GEMM with `params` (its whole reduction and epilogue): in one dispatch, or split
    /// into raw partial sums in the recorder's scratch and a reduce pass that applies the
    /// epilogue.
    pub fn push_gemm(
        &self,
        rec: &mut Recorder,
        plan: GemmPlan,
        mut params: GemmParams,
        b: GemmBuffers,
    ) {
        let (m, n) = (params.m as usize, params.n as usize);
        let scratch = rec.scratch.clone().filter(|_| plan.split_k > 1);
        let Some(part) = scratch else {
            let whole = GemmPlan { split_k: 1, ..plan };
            let mut buffers = vec![b.x, b.w, b.bias, b.residual, b.out];
            buffers.extend(b.extra);
            rec.push(plan.kernel, params, &buffers, whole.groups(m, n));
            return;
        };
        let reduce = GemmReduceParams {
            m: params.m,
            n: params.n,
            splits: plan.split_k,
            act: params.act,
            has_bias: params.has_bias,
            has_residual: params.has_residual,
            ldo: params.ldo,
            col_off: params.col_off,
        };
        params.k_len = plan.k_len(params.k as usize) as u32;
        params.act = act_code(Activation::None);
        (params.has_bias, params.has_residual) = (0, 0);
        (params.ldo, params.col_off) = (params.n, 0);
        let mut buffers = vec![b.x, b.w, self.dummy, self.dummy, &part];
        buffers.extend(b.extra);
        rec.push(plan.kernel, params, &buffers, plan.groups(m, n));
        let buffers = [&part, b.bias, b.residual, b.out];
        rec.push(Kernel::GemmReduce, reduce, &buffers, per_element(m * n));
    }
}

/// The uniforms of one GEMM over chunk `c` of a linear's weight (the whole reduction; `block`:
/// q4 weights' block width, else 0).
pub fn gemm_params(
    m: usize,
    c: &Chunk,
    linear: &Linear,
    act: Activation,
    residual: bool,
    block: usize,
) -> GemmParams {
    GemmParams {
        m: m as u32,
        n: c.rows as u32,
        k: linear.n_in as u32,
        act: act_code(act),
        has_bias: linear.bias.is_some() as u32,
        has_residual: residual as u32,
        ldo: linear.n_out as u32,
        col_off: c.row0 as u32,
        k_len: 0,
        block: block as u32,
    }
}
