//! The plan as a packed-model image keeps it: everything but the config, which comes from the
//! folder's `config.json` (the image's key covers that file). Read back, it is checked to be a
//! plan the executors can run without indexing out of bounds.

use super::{BufId, BufferSpec, Head, Op, Plan};
use crate::error::{Error, Result};
use crate::model::config::ModelConfig;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct StoredPlan {
    weight_names: Vec<String>,
    buffers: Vec<BufferSpec>,
    ops: Vec<Op>,
    encoder_ops: usize,
    hidden: BufId,
    heads: Vec<Head>,
}

impl Plan {
    pub fn stored(&self) -> StoredPlan {
        StoredPlan {
            weight_names: self.weight_names.clone(),
            buffers: self.buffers.clone(),
            ops: self.ops.clone(),
            encoder_ops: self.encoder_ops,
            hidden: self.hidden,
            heads: self.heads.clone(),
        }
    }

    /// The plan `stored` describes, under `config`; an error when an op names a weight or
    /// buffer that is not there or a head's ops lie outside the list.
    pub fn from_stored(config: ModelConfig, stored: StoredPlan) -> Result<Plan> {
        let bad = |what: String| Err(Error::Input(format!("packed model image: {what}")));
        let (weights, buffers, ops) = (
            stored.weight_names.len(),
            stored.buffers.len(),
            stored.ops.len(),
        );
        for op in &stored.ops {
            if let Some((id, _)) = op.weights().into_iter().find(|(id, _)| id.0 >= weights) {
                return bad(format!("weight {} of {weights}", id.0));
            }
            if let Some(b) = op.buffers().into_iter().find(|b| b.0 >= buffers) {
                return bad(format!("buffer {} of {buffers}", b.0));
            }
        }
        let heads_fit = (stored.heads.iter())
            .all(|h| h.ops.start <= h.ops.end && h.ops.end <= ops && h.logits.0 < buffers);
        if stored.encoder_ops > ops || stored.hidden.0 >= buffers || !heads_fit {
            return bad("a head or the encoder's end outside the plan".into());
        }
        Ok(Plan {
            config,
            weight_names: stored.weight_names,
            buffers: stored.buffers,
            ops: stored.ops,
            encoder_ops: stored.encoder_ops,
            hidden: stored.hidden,
            heads: stored.heads,
        })
    }
}

impl Op {
    /// Every buffer the op reads or writes.
    pub fn buffers(&self) -> Vec<BufId> {
        match self {
            Op::Embeddings { out, .. } => vec![*out],
            Op::Linear {
                x, residual, out, ..
            } => [Some(*x), *residual, Some(*out)]
                .into_iter()
                .flatten()
                .collect(),
            Op::Attention { qkv, out, .. } => vec![*qkv, *out],
            Op::Norm { x, out, .. }
            | Op::MeanPool { x, out }
            | Op::Gate { x, out, .. }
            | Op::Gather { x, out } => vec![*x, *out],
            Op::Rotary { qkv, .. } => vec![*qkv],
        }
    }
}
