//! Task heads appended to the encoder plan, per model family (HF module names).

use super::builder::Builder;
use super::{BufId, Linear, Norm, Op, Rows, WeightId};
use crate::error::{Error, Result};
use crate::model::activation::Activation;
use crate::model::config::HeadKind;
use crate::model::family::HeadPooling;
use crate::model::family::{HeadTransform, MlmNames, ModelType};
use crate::model::ModelConfig;

/// Appends the ops of one head and returns its logits buffer.
pub(super) fn build_head(hb: &mut HeadBuilder, kind: HeadKind) -> Result<BufId> {
    let h = hb.cfg().hidden_size;
    let t = hb.cfg().model_type;
    if let Some(t) = t.family().head_transform {
        if kind != HeadKind::MaskedLm {
            return transformed_head(hb, kind, t);
        }
    }
    match kind {
        HeadKind::TokenClasses => {
            let l = classifier(hb, "classifier", h)?;
            Ok(hb.dense(hb.hidden, l, Activation::None, "logits"))
        }
        HeadKind::Span => {
            let l = hb.linear("qa_outputs", h, 2)?;
            Ok(hb.dense(hb.hidden, l, Activation::None, "logits"))
        }
        HeadKind::NextSentence => {
            // BERT only (the config refuses other families): pooler, then `seq_relationship`.
            let cls = hb.buffer("cls", Rows::First, h);
            hb.push(Op::Gather {
                x: hb.hidden,
                out: cls,
            });
            let pre = hb.linear("pooler.dense", h, h)?;
            let pooled = hb.dense(cls, pre, Activation::Tanh, "pooled");
            let l = hb.linear("cls.seq_relationship", h, 2)?;
            Ok(hb.dense(pooled, l, Activation::None, "nsp_logits"))
        }
        HeadKind::SequenceClasses => {
            let pooled = pool(hb, "cls");
            let f = t.family();
            let (pre, act, out) = match f.sequence_head_legacy {
                Some(old) if !hb.has(&format!("{}.weight", f.sequence_head.out)) => {
                    (old.dense, old.act, old.out)
                }
                _ => sequence_head_names(t),
            };
            let act = hb.cfg().pooler_act.unwrap_or(act);
            let pre = hb.linear(pre, h, h)?;
            let pooled = hb.dense(pooled, pre, act, "pooled");
            let l = classifier(hb, out, h)?;
            let logits = hb.dense(pooled, l, Activation::None, "logits");
            Ok(late_mean(hb, logits))
        }
        HeadKind::MaskedLm => masked_lm(hb),
    }
}

/// ModernBERT's heads: the sequence head pools (first token or mean), every head then runs
/// the shared transform and its own projection.
fn transformed_head(hb: &mut HeadBuilder, kind: HeadKind, t: HeadTransform) -> Result<BufId> {
    let h = hb.cfg().hidden_size;
    let x = match kind {
        HeadKind::SequenceClasses => pool(hb, "pooled_tokens"),
        _ => hb.hidden,
    };
    let act = hb.cfg().pooler_act.unwrap_or(Activation::Gelu);
    let dense = hb.linear(t.dense, h, h)?;
    let norm = hb.norm(t.norm, h)?;
    let rows = hb.rows(x);
    let transformed = hb.buffer("head_transform", rows, h);
    hb.push(Op::Linear {
        x,
        linear: dense,
        act,
        residual: None,
        norm: Some(norm),
        out: transformed,
    });
    let out = match kind {
        HeadKind::Span => hb.linear(t.out, h, 2)?,
        _ => classifier(hb, t.out, h)?,
    };
    let logits = hb.dense(transformed, out, Activation::None, "logits");
    Ok(match kind {
        HeadKind::SequenceClasses => late_mean(hb, logits),
        _ => logits,
    })
}

/// The sequence head's input: the first token's or the mean of the real tokens' hidden
/// state (into a new `First`-rows buffer `name`), or every token's with late pooling.
fn pool(hb: &mut HeadBuilder, name: &'static str) -> BufId {
    let (x, h, pooling) = (hb.hidden, hb.cfg().hidden_size, hb.cfg().head_pooling);
    if pooling == HeadPooling::Late {
        return x;
    }
    let out = hb.buffer(name, Rows::First, h);
    hb.push(match pooling {
        HeadPooling::Mean => Op::MeanPool { x, out },
        _ => Op::Gather { x, out },
    });
    out
}

/// With late pooling, the mean of the real tokens' logits; else `logits` as they are.
fn late_mean(hb: &mut HeadBuilder, logits: BufId) -> BufId {
    if hb.rows(logits) != Rows::Tokens {
        return logits;
    }
    let cols = hb.cols(logits);
    let out = hb.buffer("pooled_logits", Rows::First, cols);
    hb.push(Op::MeanPool { x: logits, out });
    out
}

fn classifier(hb: &mut HeadBuilder, name: &str, n_in: usize) -> Result<Linear> {
    let n = hb
        .rows_of(&format!("{name}.weight"))
        .ok_or_else(|| hb.missing(&format!("{name}.weight")))?;
    hb.linear(name, n_in, n)
}

/// Transform (dense + activation + LayerNorm) on the picked mask rows, then the vocabulary
/// decoder, tied to the word embeddings when the checkpoint has no decoder matrix.
fn masked_lm(hb: &mut HeadBuilder) -> Result<BufId> {
    let cfg = hb.cfg().clone();
    let (h, e, v) = (cfg.hidden_size, cfg.embedding_size, cfg.vocab_size);
    let MlmNames {
        dense,
        norm,
        decoder,
        bias,
        act,
        transform,
    } = mlm_names_in(cfg.model_type, |name| hb.has(name));
    // ModernBERT's MLM transform is its shared head, with the classifier's activation.
    let head_act = cfg
        .pooler_act
        .filter(|_| cfg.family().head_transform.is_some());
    let act = act.or(head_act).unwrap_or(cfg.hidden_act);
    let picked = hb.buffer("mask_rows", Rows::Picked, h);
    hb.push(Op::Gather {
        x: hb.hidden,
        out: picked,
    });
    let transformed = match transform {
        true => {
            let dense = hb.linear(dense, h, e)?;
            let norm = hb.norm(norm, e)?;
            let transformed = hb.buffer("mlm_transform", Rows::Picked, e);
            hb.push(Op::Linear {
                x: picked,
                linear: dense,
                act,
                residual: None,
                norm: Some(norm),
                out: transformed,
            });
            transformed
        }
        false => picked,
    };
    let weight = if hb.has(&format!("{decoder}.weight")) {
        hb.weight(&format!("{decoder}.weight"), &[v, e])?
    } else {
        hb.word
    };
    let bias_name = if hb.has(bias) {
        bias.to_string()
    } else {
        format!("{decoder}.bias")
    };
    let bias = match cfg.biased(decoder) {
        true => Some(hb.weight(&bias_name, &[v])?),
        false => None,
    };
    let linear = Linear {
        weight,
        bias,
        n_in: e,
        n_out: v,
    };
    Ok(hb.dense(transformed, linear, Activation::None, "logits"))
}

/// Module names of the sequence-classification head: the pooling dense layer, its
/// activation, and the output projection (also the ONNX importer's names).
pub(crate) fn sequence_head_names(t: ModelType) -> (&'static str, Activation, &'static str) {
    let head = t.family().sequence_head;
    (head.dense, head.act, head.out)
}

pub(crate) fn mlm_names(t: ModelType) -> MlmNames {
    t.family().mlm
}

/// The family's masked-LM names, or its older checkpoints' names where `has` lacks the
/// transform of the current ones.
fn mlm_names_in(t: ModelType, has: impl Fn(&str) -> bool) -> MlmNames {
    let f = t.family();
    match f.mlm_legacy {
        Some(legacy) if !has(&format!("{}.weight", f.mlm.dense)) => legacy,
        _ => f.mlm,
    }
}

/// What the task heads (in `heads.rs`) may use of the builder.
pub(super) struct HeadBuilder<'a, 'b> {
    pub(super) b: &'a mut Builder<'b>,
    pub hidden: BufId,
    /// The word embeddings, which masked-LM decoders tie to.
    pub word: WeightId,
}

impl HeadBuilder<'_, '_> {
    pub fn cfg(&self) -> &ModelConfig {
        self.b.cfg
    }
    pub fn has(&self, name: &str) -> bool {
        self.b.src.contains(self.b.prefix(), name)
    }
    pub fn rows_of(&self, name: &str) -> Option<usize> {
        self.b
            .src
            .find(self.b.prefix(), name)
            .and_then(|(_, t)| t.shape.first().copied())
    }
    pub fn weight(&mut self, name: &str, shape: &[usize]) -> Result<WeightId> {
        self.b.weight(name, shape)
    }
    pub fn linear(&mut self, name: &str, n_in: usize, n_out: usize) -> Result<Linear> {
        self.b.linear(name, n_in, n_out)
    }
    pub fn norm(&mut self, name: &str, n: usize) -> Result<Norm> {
        self.b.norm(name, n)
    }
    pub fn buffer(&mut self, name: &'static str, rows: Rows, cols: usize) -> BufId {
        self.b.buffer(name, rows, cols)
    }
    pub fn rows(&self, x: BufId) -> Rows {
        self.b.buffers[x.0].rows
    }
    pub fn cols(&self, x: BufId) -> usize {
        self.b.buffers[x.0].cols
    }
    pub fn push(&mut self, op: Op) {
        self.b.ops.push(op);
    }
    /// Appends `out = act(x · Wᵀ + b)` into a new buffer and returns it.
    pub fn dense(&mut self, x: BufId, l: Linear, act: Activation, name: &'static str) -> BufId {
        let rows = self.b.buffers[x.0].rows;
        let out = self.buffer(name, rows, l.n_out);
        self.b.op_linear(x, l, act, out);
        out
    }
    pub fn missing(&self, what: &str) -> Error {
        Error::MissingTensor(what.to_string())
    }
}
