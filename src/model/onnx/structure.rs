//! Names weights by where they sit in the graph. The walk starts at the embedding lookup of
//! `input_ids`, sums the other lookups into the embeddings LayerNorm, then follows the hidden
//! state layer by layer: the three linears fed by it are Q, K and V, told apart by where
//! they enter the attention products (Q and K meet in the scores product that reaches the
//! Softmax, V is multiplied by the probabilities); the next linear after the context
//! product is the attention output, then residual + LayerNorm, the FFN pair, residual +
//! LayerNorm. What follows the last layer is the task head (token classifier / QA
//! outputs on every token, masked-LM transform + decoder, or a pooled first-token head).
//!
//! What a family does differently comes from its table entry (`family/`): which lookups the
//! embedding sum has (no position table: Jina; no token types: MPNet, DistilBERT), the
//! projection after the embeddings (ELECTRA, ALBERT), the terms added to the attention scores
//! besides the mask (MPNet's relative bias, a lookup of one `[buckets, heads]` table; Jina's
//! ALiBi, computed from constant slopes that must be the host's), the gated MLP (Jina: one
//! unbiased linear whose output is sliced in halves, the activation on the first), and shared
//! layers (ALBERT: every layer's weights have the same names, met again in each layer).
//!
//! DeBERTa-v2/v3 (disentangled attention): Q and K also enter the c2p / p2c products, whose
//! gathered, scaled results are all that is added to the scores (checked: each gather's index
//! comes from a `Range` over the sequence length, no weight). The other operand of each
//! product is the relative-embedding table (through its LayerNorm) projected by a linear:
//! K's / Q's own weight met again (share_att_key: recognised, pushed once, quantized or not)
//! or a `pos_key_proj` / `pos_query_proj` of its own. The table and its LayerNorm are named
//! once; DeBERTa's `LayerNorm(embeddings) * mask` is followed to the first layer.

use super::super::family::ModelType;
use super::super::family::{layer_names, matches_template, DistanceBias, Family, FfnGate, Mlp};
use super::super::family::{NormKind, NormPlacement, Positions};
use super::super::plan::heads::{mlm_names, sequence_head_names};
use super::super::positions::alibi_slopes;
use super::facts::GraphFacts;
use super::ops::{is_linear_op, Linear};
use super::proto::{GraphProto, NodeProto};
use super::{
    attr_i, attr_ints, input, node_err, output, tensor, ImportedTensor, Importer, OnnxError, Value,
};
use std::collections::{HashSet, VecDeque};

mod disentangled;
mod distance_bias;
mod embeddings;
mod head;
mod layer;
mod prenorm;
mod rotary_layer;
mod rotation;
mod search;
mod sites;
mod transform_head;

struct Norm<'a> {
    node: &'a NodeProto,
    gamma: Value,
    /// `None` where the norm adds no bias (ModernBERT's `norm_bias: false`).
    beta: Option<Value>,
    out: String,
}

/// Ops that reshape or scale a value on its way into the attention products.
const PASS_THROUGH: &[&str] = &[
    "Reshape",
    "Transpose",
    "Mul",
    "Div",
    "Cast",
    "Squeeze",
    "Unsqueeze",
    "Identity",
];

/// Ops of a gated MLP's activation (decomposed or fused).
const GATE_ACTS: [&str; 7] = [
    "Erf",
    "Tanh",
    "Sigmoid",
    "Relu",
    "Gelu",
    "FastGelu",
    "QuickGelu",
];

pub(super) fn walk(
    imp: Importer,
    graph: &GraphProto,
    family: ModelType,
) -> Result<(Vec<ImportedTensor>, GraphFacts), OnnxError> {
    let fam = family.family();
    if fam.layer.interleaved_qkv.is_some() {
        return Err(OnnxError::Unsupported(format!(
            "{}'s head-interleaved in_proj is not followed in ONNX graphs; load its safetensors weights",
            fam.class
        )));
    }
    if fam.norm_kind == NormKind::Rms {
        return Err(OnnxError::Unsupported(format!(
            "{}'s RMSNorm layers are not followed in ONNX graphs yet; load its safetensors weights",
            fam.class
        )));
    }
    let mut w = Walker {
        imp,
        graph,
        prefix: family.prefix(),
        family,
        fam,
        facts: GraphFacts::default(),
    };
    let mut h = w.embeddings()?;
    if let NormPlacement::Pre {
        final_norm,
        first_attn_norm,
    } = fam.norms
    {
        let h = w.prenorm_layers(h, final_norm, first_attn_norm)?;
        w.head(&h)?;
        w.check_all_visited()?;
        return Ok((w.imp.out, w.facts));
    }
    let mut layer = 0;
    loop {
        w.imp.layer = Some(layer);
        let next = w.layer(&h, layer)?;
        w.imp.layer = None;
        if let Some(next) = next {
            h = next;
            layer += 1;
            continue;
        }
        if layer == 0 {
            // The projection from the embedding width to the hidden width (ELECTRA, ALBERT).
            let mut first = w.linears_from(&h)?;
            if first.len() == 1 {
                let proj = first.remove(0);
                let next = proj.out.clone();
                let name = format!("{}.{}", w.prefix, w.fam.embeddings.project);
                w.push_linear(&name, proj)?;
                w.imp.layer = Some(0);
                let after = w.layer(&next, 0)?;
                w.imp.layer = None;
                if let Some(after) = after {
                    h = after;
                    layer = 1;
                    continue;
                }
            }
            return Err(OnnxError::NoEncoder(format!(
                "no attention layer follows the embeddings LayerNorm (output `{h}`)"
            )));
        }
        break;
    }
    w.head(&h)?;
    w.check_all_visited()?;
    Ok((w.imp.out, w.facts))
}

struct Walker<'a, 'g> {
    imp: Importer<'a>,
    graph: &'g GraphProto,
    prefix: &'static str,
    family: ModelType,
    fam: &'static Family,
    /// What the graph computes besides weights, for loading to check against the config.
    facts: GraphFacts,
}

impl<'a> Walker<'a, '_> {
    /// Users of a tensor, leaving out shape queries.
    fn users(&self, t: &str) -> Vec<&'a NodeProto> {
        self.imp
            .consumers
            .get(t)
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|n| !matches!(n.op_type.as_str(), "Shape" | "Size"))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn only_user(&self, t: &str) -> Option<&'a NodeProto> {
        match self.users(t).as_slice() {
            [u] => Some(u),
            _ => None,
        }
    }

    fn mark(&mut self, node: &NodeProto) {
        self.imp.visited.insert(output(node).to_string());
    }

    fn push_linear(&mut self, name: &str, l: Linear) -> Result<(), OnnxError> {
        self.mark(l.node);
        self.imp.push(format!("{name}.weight"), l.weight)?;
        if let Some(b) = l.bias {
            self.imp.push(format!("{name}.bias"), b)?;
        }
        Ok(())
    }

    fn push_norm(&mut self, name: &str, n: Norm) -> Result<(), OnnxError> {
        self.mark(n.node);
        let shape = n.gamma.shape.clone();
        self.imp.push(format!("{name}.weight"), n.gamma)?;
        let module = name
            .strip_prefix(&format!("{}.", self.prefix))
            .unwrap_or(name);
        let switched = (self.fam.bias_switches.iter())
            .any(|s| s.modules.iter().any(|t| matches_template(t, module)));
        match n.beta {
            Some(beta) => self.imp.push(format!("{name}.bias"), beta),
            // A norm the config may leave unbiased; the plan adds zeros where it says so.
            None if switched => Ok(()),
            None => {
                let zeros = vec![0.0; shape.iter().product()];
                let beta = Value::new("", shape, zeros);
                self.imp.push(format!("{name}.bias"), beta)
            }
        }
    }

    /// Every node holding a weight must have been explained by the walk.
    fn check_all_visited(&self) -> Result<(), OnnxError> {
        for node in &self.graph.node {
            let op = node.op_type.as_str();
            let holds_weight = match op {
                _ if is_linear_op(node) => {
                    self.imp.is_const(input(node, 1), 0) && !self.imp.is_const(input(node, 0), 0)
                }
                "Gather" | "GatherBlockQuantized" => self
                    .imp
                    .consts
                    .get(input(node, 0))
                    .is_some_and(|t| t.dims.len() == 2 && t.dims.iter().product::<i64>() > 1),
                "LayerNormalization" => true,
                _ => false,
            };
            if holds_weight && !self.imp.visited.contains(output(node)) {
                return Err(node_err(
                    node,
                    "holds weights the importer cannot place in a BERT-family encoder or head",
                ));
            }
        }
        Ok(())
    }
}

/// Whether a `MatMul` multiplies by a constant (a linear layer, not an attention product).
fn is_linear_site_input(w: &Walker, u: &NodeProto) -> bool {
    w.imp.is_const(input(u, 1), 0)
}
