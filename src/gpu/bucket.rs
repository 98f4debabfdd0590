//! The static buffer plan for one (batch, length, picked rows) bucket: inputs, activations,
//! one uniform buffer for every dispatch's parameters, bind groups and dispatch sizes, all
//! made once and reused by every call that fits.

use super::bucket_inputs::BucketInputs;
use super::buffers::{staging, storage};
use super::builder::Builder;
use super::recorder::{Recorder, Step};
use crate::error::Result;
use crate::exec::{Dims, Want};
use crate::model::Rows;

pub struct Bucket {
    pub inputs: BucketInputs,
    pub acts: Vec<wgpu::Buffer>,
    pub steps: Vec<Step>,
    /// `steps[..encoder_steps]` produce the last hidden state.
    pub encoder_steps: usize,
    /// The steps of each of the plan's heads.
    pub head_steps: Vec<std::ops::Range<usize>>,
    pub staging_hidden: wgpu::Buffer,
    /// One per head of the plan.
    pub staging_logits: Vec<wgpu::Buffer>,
}

impl Bucket {
    /// The steps a forward that wants `want` runs: the encoder's, then the head's it asks for.
    pub fn steps(&self, want: Want) -> Vec<&Step> {
        let head = want.head_index().and_then(|i| self.head_steps.get(i));
        let head = head.map_or(&[][..], |r| &self.steps[r.clone()]);
        self.steps[..self.encoder_steps]
            .iter()
            .chain(head)
            .collect()
    }
}

impl Builder<'_> {
    pub fn build(&self, dims: Dims) -> Result<Bucket> {
        let d = self.device;
        let inputs = BucketInputs::new(d, self.queue, dims, self.plan);
        let acts: Vec<wgpu::Buffer> = (self.plan.buffers.iter())
            .map(|b| storage(d, &b.name, dims.rows(b.rows) * b.cols * 4))
            .collect();
        let align = d.limits().min_uniform_buffer_offset_alignment.max(16) as usize;
        let scratch_bytes = (self.gemms(dims).iter())
            .filter(|g| g.plan.split_k > 1)
            .map(|g| g.plan.split_k as usize * g.m * g.n * 4)
            .max();
        let mut rec = Recorder {
            bytes: Vec::new(),
            align,
            steps: Vec::new(),
            scratch: scratch_bytes.map(|b| storage(d, "split_k", b)),
        };
        // `first_step[i]`: the first step of op `i` (one more entry for the end).
        let mut first_step = Vec::with_capacity(self.plan.ops.len() + 1);
        for op in &self.plan.ops {
            first_step.push(rec.steps.len());
            self.op_steps(op, dims, &inputs, &acts, &mut rec);
        }
        first_step.push(rec.steps.len());
        let encoder_steps = first_step[self.plan.encoder_ops];
        let head_steps = (self.plan.heads.iter())
            .map(|h| first_step[h.ops.start]..first_step[h.ops.end])
            .collect();
        let steps = self.bind_all(rec)?;
        let hidden_bytes = dims.rows(Rows::Tokens) * self.plan.config.hidden_size * 4;
        let staging_logits = (self.plan.heads.iter())
            .map(|h| {
                let spec = &self.plan.buffers[h.logits.0];
                staging(d, dims.rows(spec.rows) * spec.cols * 4)
            })
            .collect();
        Ok(Bucket {
            inputs,
            acts,
            steps,
            encoder_steps,
            head_steps,
            staging_hidden: staging(d, hidden_bytes),
            staging_logits,
        })
    }
}
