//! Names weights by where they sit in the graph. The walk starts at the embedding lookup of
//! `input_ids`, sums the other lookups into the embeddings LayerNorm, then follows the hidden
//! state layer by layer: the three linears fed by it are Q, K and V, told apart by where
//! they enter the attention products (Q and K meet in the scores product that reaches the
//! Softmax, V is multiplied by the probabilities); the next linear after the context
//! product is the attention output, then residual + LayerNorm, the FFN pair, residual +
//! LayerNorm. What follows the last layer is the task head (token classifier / QA
//! outputs on every token, masked-LM transform + decoder, or a pooled first-token head).
//!
//! What a family does differently comes from its table entry (`family.rs`): which lookups the
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

mod prenorm;
mod rotary_layer;
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

/// Ops between the scores product and the Softmax (scaling, mask).
const TO_SOFTMAX: &[&str] = &["Mul", "Div", "Add", "Sub", "Where", "Cast", "Reshape"];

/// Ops between DeBERTa's position products and the scores they are added to (the gathered
/// relative scores, transposed for p2c, scaled, summed).
const TO_SCORES: &[&str] = &[
    "GatherElements",
    "Transpose",
    "Reshape",
    "Div",
    "Mul",
    "Add",
    "Cast",
    "Squeeze",
    "Unsqueeze",
];

/// Ops between DeBERTa's relative embeddings (or their projection) and the position
/// products: slicing to the span, batching over heads, the projection's bias.
const FROM_RELATIVE: &[&str] = &[
    "Slice",
    "Unsqueeze",
    "Squeeze",
    "Reshape",
    "Transpose",
    "Expand",
    "Tile",
    "Cast",
    "Identity",
    "Add",
    "Mul",
    "Div",
    "DynamicQuantizeLinear",
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

/// What a tensor is computed from, back to graph inputs, constants and shape queries (not
/// crossing `Shape`: a value computed from a tensor's shape only does not depend on it).
#[derive(Default)]
struct Ancestry<'a> {
    /// `Gather` nodes reading a constant 2-D table.
    tables: Vec<&'a NodeProto>,
    /// Float constants read (or values computed from constants only), by name.
    floats: Vec<String>,
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

    /// A linear node's site with its bias attached: an inline bias, or an `Add` of a
    /// constant of the output width as the product's only user.
    fn site(&self, node: &'a NodeProto) -> Result<Option<Linear<'a>>, OnnxError> {
        self.site_of(node, false)
    }

    /// As [`Walker::site`]; with `const_input`, also a linear of a value computed from
    /// constants.
    fn site_of(
        &self,
        node: &'a NodeProto,
        const_input: bool,
    ) -> Result<Option<Linear<'a>>, OnnxError> {
        let Some(mut l) = self.imp.linear_site_of(node, const_input)? else {
            return Ok(None);
        };
        if l.bias.is_none() {
            if let [add] = self.users(&l.out).as_slice() {
                if add.op_type == "Add" {
                    let other = add.input.iter().find(|i| **i != l.out);
                    if let Some(b) = other.map(|o| self.imp.resolve(o, 0)).transpose()?.flatten() {
                        if b.data.len() == l.n_out() {
                            let mut b = b;
                            b.shape = vec![l.n_out()];
                            l.bias = Some(b);
                            l.out = output(add).to_string();
                        }
                    }
                }
            }
        }
        Ok(Some(l))
    }

    /// Linear layers that take `h` as their input (directly, or through the activation
    /// quantization of dynamically quantized models).
    fn linears_from(&self, h: &str) -> Result<Vec<Linear<'a>>, OnnxError> {
        let mut out = Vec::new();
        for u in self.users(h) {
            if is_linear_op(u) && input(u, 0) == h {
                out.extend(self.site(u)?);
            } else if matches!(u.op_type.as_str(), "DynamicQuantizeLinear" | "Cast") {
                for v in self.users(output(u)) {
                    if is_linear_op(v) && input(v, 0) == output(u) {
                        out.extend(self.site(v)?);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The first linear layer(s) downstream of `t`, breadth first, not crossing another
    /// linear; at most one distinct layer may be found at the nearest depth.
    fn next_linear(&self, t: &str, limit: usize) -> Result<Option<Linear<'a>>, OnnxError> {
        let mut seen = HashSet::new();
        let mut frontier: Vec<String> = vec![t.to_string()];
        for _ in 0..limit {
            let mut found: Vec<&'a NodeProto> = Vec::new();
            let mut next = Vec::new();
            for tensor in &frontier {
                for u in self.users(tensor) {
                    if !seen.insert(output(u).to_string()) {
                        continue;
                    }
                    if is_linear_op(u) && !self.imp.is_const(input(u, 0), 0) {
                        found.push(u);
                    } else {
                        next.extend(u.output.iter().cloned());
                    }
                }
            }
            match found.as_slice() {
                [] => {}
                [one] => return self.site(one),
                [a, b, ..] => {
                    return Err(node_err(
                        a,
                        format!(
                            "ambiguous structure: `{}` and `{}` both follow `{t}`",
                            a.name, b.name
                        ),
                    ))
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        Ok(None)
    }

    /// The LayerNorm that `t` flows into within a few steps (residual adds, activations),
    /// as one `LayerNormalization` node or decomposed (`ReduceMean`, `Sub`, `Pow`, …, `Div`,
    /// `Mul(gamma)`, `Add(beta)`); never crossing a linear layer.
    fn norm_after(&self, t: &str, limit: usize) -> Result<Option<Norm<'a>>, OnnxError> {
        let mut queue = VecDeque::from([(t.to_string(), 0)]);
        let mut seen = HashSet::new();
        while let Some((tensor, depth)) = queue.pop_front() {
            for u in self.users(&tensor) {
                if !seen.insert(output(u).to_string()) || is_linear_op(u) {
                    continue;
                }
                if let Some(n) = self.norm_at(u)? {
                    return Ok(Some(n));
                }
                if depth + 1 < limit {
                    queue.extend(u.output.iter().map(|o| (o.clone(), depth + 1)));
                }
            }
        }
        Ok(None)
    }

    fn norm_at(&self, u: &'a NodeProto) -> Result<Option<Norm<'a>>, OnnxError> {
        match u.op_type.as_str() {
            "LayerNormalization" => {
                let gamma = self
                    .imp
                    .resolve(input(u, 1), 0)?
                    .ok_or_else(|| node_err(u, "scale is not a constant"))?;
                let beta = self.imp.resolve(input(u, 2), 0)?;
                Ok(Some(Norm {
                    node: u,
                    gamma,
                    beta,
                    out: output(u).to_string(),
                }))
            }
            "ReduceMean" => {
                let x = input(u, 0);
                let mean = output(u);
                let centred = self
                    .users(x)
                    .into_iter()
                    .find(|s| s.op_type == "Sub" && input(s, 0) == x && input(s, 1) == mean);
                let Some(sub) = centred else {
                    return Ok(None);
                };
                let Some(div) = self
                    .users(output(sub))
                    .into_iter()
                    .find(|d| d.op_type == "Div" && input(d, 0) == output(sub))
                else {
                    return Ok(None);
                };
                let (Some(gamma), mul) = self.const_operand(output(div), "Mul")? else {
                    return Ok(None);
                };
                let mul = mul.unwrap_or(div);
                // An `Add` of a non-constant after the scale is the next residual sum.
                let (beta, add) = match self.const_operand(output(mul), "Add")? {
                    (Some(beta), Some(add)) => (Some(beta), add),
                    _ => (None, mul),
                };
                Ok(Some(Norm {
                    node: u,
                    gamma,
                    beta,
                    out: output(add).to_string(),
                }))
            }
            _ => Ok(None),
        }
    }

    /// The constant operand of `t`'s only user when that user is an `op` node.
    fn const_operand(
        &self,
        t: &str,
        op: &str,
    ) -> Result<(Option<Value>, Option<&'a NodeProto>), OnnxError> {
        let Some(n) = self.only_user(t) else {
            return Ok((None, None));
        };
        if n.op_type != op {
            return Ok((None, None));
        }
        let other = n.input.iter().find(|i| i.as_str() != t);
        let v = other.map(|o| self.imp.resolve(o, 0)).transpose()?.flatten();
        Ok((v, Some(n)))
    }

    /// Whether `t` is computed from graph input `name` (within a few steps back).
    fn traces_to(&self, t: &str, name: &str, depth: usize) -> bool {
        if t == name {
            return true;
        }
        match self.imp.producer.get(t) {
            Some(p) if depth < 12 => p
                .input
                .iter()
                .any(|i| !i.is_empty() && self.traces_to(i, name, depth + 1)),
            _ => false,
        }
    }

    /// The lookup node behind an addend of the embedding sum.
    fn lookup_behind(&self, t: &str, depth: usize) -> Option<&'a NodeProto> {
        let p = self.imp.producer.get(t)?;
        match p.op_type.as_str() {
            "Gather" | "GatherBlockQuantized" => Some(p),
            "DequantizeLinear" | "Cast" | "Identity" | "Mul" if depth < 4 => p
                .input
                .iter()
                .find_map(|i| self.lookup_behind(i, depth + 1)),
            _ => None,
        }
    }

    fn embeddings(&mut self) -> Result<String, OnnxError> {
        let ids = self
            .graph
            .input
            .iter()
            .map(|i| i.name.as_str())
            .find(|n| *n == "input_ids")
            .or_else(|| self.graph.input.first().map(|i| i.name.as_str()))
            .ok_or_else(|| OnnxError::NoEncoder("the graph has no inputs".into()))?
            .to_string();
        let mut users = self.users(&ids);
        for u in users.clone() {
            if matches!(u.op_type.as_str(), "Cast" | "Identity") {
                users.extend(self.users(output(u)));
            }
        }
        let mut word = None;
        for u in users {
            if matches!(u.op_type.as_str(), "Gather" | "GatherBlockQuantized")
                && self.traces_to(input(u, 1), &ids, 10)
            {
                if let Some(found) = self.imp.embedding(u)? {
                    word = Some((u, found));
                    break;
                }
            }
        }
        let Some((word_node, (word_table, word_out))) = word else {
            return Err(OnnxError::NoEncoder(format!(
                "no embedding lookup of graph input `{ids}`"
            )));
        };
        let norm = self
            .norm_after(&word_out, 8)?
            .ok_or_else(|| node_err(word_node, "the word embeddings reach no LayerNorm"))?;
        // The other lookups added into the sum before the LayerNorm.
        let mut others: Vec<(&'a NodeProto, Value)> = Vec::new();
        let mut t = word_out.clone();
        for _ in 0..8 {
            if t == input(norm.node, 0) {
                break;
            }
            let Some(add) = self.only_user(&t) else {
                break;
            };
            if add.op_type != "Add" {
                break;
            }
            for addend in add.input.iter().filter(|i| **i != t) {
                if let Some(g) = self.lookup_behind(addend, 0) {
                    let (table, _) = self
                        .imp
                        .embedding(g)?
                        .ok_or_else(|| node_err(g, "lookup table is not a constant"))?;
                    others.push((g, table));
                }
            }
            t = output(add).to_string();
        }
        self.mark(word_node);
        let p = self.prefix;
        let names = self.fam.embeddings;
        self.imp
            .push(format!("{p}.{}.weight", names.word), word_table)?;
        let is_type = |w: &Self, g: &NodeProto| w.traces_to(input(g, 1), "token_type_ids", 0);
        let (types, positions) = (self.fam.token_types, self.fam.positions != Positions::None);
        let type_index = match others.as_slice() {
            [] => None,
            [(g, _), ..] if !(types && positions) => {
                let allowed = usize::from(types) + usize::from(positions);
                if others.len() > allowed {
                    let what = match (types, positions) {
                        (true, false) => "token types and no position table",
                        (false, true) => "a position table and no token types",
                        _ => "neither position nor token type embeddings",
                    };
                    return Err(node_err(
                        g,
                        format!(
                            "{} lookups in the embedding sum, but {} has {what}",
                            others.len() + 1,
                            self.fam.class
                        ),
                    ));
                }
                types.then_some(0)
            }
            [(g, _)] => is_type(self, g).then_some(0),
            [(a, ta), (b, tb)] => Some(if is_type(self, a) {
                0
            } else if is_type(self, b) || tb.shape[0] < ta.shape[0] {
                1
            } else {
                0
            }),
            [.., (g, _)] => {
                return Err(node_err(g, "more than three lookups in the embedding sum"))
            }
        };
        for (i, (g, table)) in others.into_iter().enumerate() {
            let kind = if Some(i) == type_index {
                names.token_type
            } else {
                names.position
            };
            self.mark(g);
            self.imp.push(format!("{p}.{kind}.weight"), table)?;
        }
        let mut out = norm.out.clone();
        let norm_name = names.norm.ok_or_else(|| {
            node_err(
                norm.node,
                format!("{} has no embeddings norm", self.fam.class),
            )
        })?;
        self.push_norm(&format!("{p}.{norm_name}"), norm)?;
        // DeBERTa zeroes the padding's embeddings: `LayerNorm(e) * mask`.
        if let Some(mul) = self.only_user(&out).filter(|m| m.op_type == "Mul") {
            let other = mul.input.iter().find(|i| **i != out);
            if other.is_some_and(|o| self.traces_to(o, "attention_mask", 0)) {
                out = output(mul).to_string();
            }
        }
        Ok(out)
    }

    /// Where a projection's output enters the attention products: the product node and
    /// which of its inputs.
    fn attention_entry(&self, t: &str) -> Option<(&'a NodeProto, usize)> {
        let mut t = t.to_string();
        for _ in 0..12 {
            let u = self.only_user(&t)?;
            if u.op_type == "MatMul" && !is_linear_site_input(self, u) {
                return u.input.iter().position(|i| *i == t).map(|i| (u, i));
            }
            if !PASS_THROUGH.contains(&u.op_type.as_str()) {
                return None;
            }
            t = output(u).to_string();
        }
        None
    }

    fn reaches_softmax(&self, product: &NodeProto) -> bool {
        let mut t = output(product).to_string();
        for _ in 0..8 {
            let Some(u) = self.only_user(&t) else {
                return false;
            };
            if u.op_type == "Softmax" {
                return true;
            }
            if !TO_SOFTMAX.contains(&u.op_type.as_str()) {
                return false;
            }
            t = output(u).to_string();
        }
        false
    }

    /// One encoder layer from hidden state `h`; its output hidden state, or `None` when `h`
    /// does not feed an attention block.
    fn layer(&mut self, h: &str, i: usize) -> Result<Option<String>, OnnxError> {
        if self.fam.rotary.is_some() {
            return self.rotary_layer(h, i);
        }
        let linears = self.linears_from(h)?;
        if linears.len() < 3 {
            return Ok(None);
        }
        let (mut q, mut k, mut v) = (None, None, None);
        let (mut context, mut scores_product) = (None, None);
        let disentangled = matches!(self.fam.distance_bias, DistanceBias::Disentangled { .. });
        // DeBERTa: the products Q and K enter besides the scores (c2p, p2c).
        let (mut q_pos, mut k_pos) = (Vec::new(), Vec::new());
        for l in linears {
            let mut others = Vec::new();
            let entry = match disentangled {
                true => self.disentangled_entry(&l.out, &mut others),
                false => self.attention_entry(&l.out),
            };
            let Some((product, slot)) = entry else {
                return Ok(None);
            };
            if !others.is_empty() && !self.reaches_softmax(product) {
                return Ok(None);
            }
            if self.reaches_softmax(product) {
                match slot {
                    0 => q_pos = others,
                    _ => k_pos = others,
                }
            }
            let scores = self.reaches_softmax(product);
            if scores {
                scores_product = Some(product);
            }
            let place = match (scores, slot) {
                (true, 0) => &mut q,
                (true, _) => &mut k,
                (false, 1) => {
                    context = Some(product);
                    &mut v
                }
                _ => return Ok(None),
            };
            if place.replace(l).is_some() {
                return Err(node_err(
                    product,
                    "several projections enter the same attention input",
                ));
            }
        }
        let (Some(q), Some(k), Some(v), Some(context), Some(scores)) =
            (q, k, v, context, scores_product)
        else {
            return Ok(None);
        };
        if !disentangled {
            self.distance_bias(scores)?;
        }
        let names = layer_names(self.family, i);
        let p = self.prefix;
        let (attn_out, attn_norm) = self.attention_output(context)?;
        let mut ffn = self.linears_from(&attn_norm.out)?;
        if ffn.len() != 1 {
            return Err(node_err(
                attn_norm.node,
                format!(
                    "{} linear layers follow the attention LayerNorm, expected 1",
                    ffn.len()
                ),
            ));
        }
        let ffn_in = ffn.remove(0);
        if let Mlp::Gated { .. } = self.fam.mlp {
            self.gated_halves(&ffn_in)?;
        }
        let ffn_out = self
            .next_linear(&ffn_in.out, 12)?
            .ok_or_else(|| node_err(ffn_in.node, "no second FFN linear after the activation"))?;
        let layer = &self.fam.layer;
        for (template, l) in [
            (layer.qkv[0], &q),
            (layer.qkv[1], &k),
            (layer.qkv[2], &v),
            (layer.attn_out, &attn_out),
            (layer.ffn_in, &ffn_in),
            (layer.ffn_out, &ffn_out),
        ] {
            if l.bias.is_some() && self.fam.unbiased.contains(&template) {
                return Err(node_err(
                    l.node,
                    format!(
                        "{} has no bias in {}, but this linear adds one",
                        template.replace("{i}.", ""),
                        self.fam.class
                    ),
                ));
            }
        }
        let ffn_norm = self
            .norm_after(&ffn_out.out, 4)?
            .ok_or_else(|| node_err(ffn_out.node, "no LayerNorm after the FFN"))?;
        let out = ffn_norm.out.clone();
        if disentangled {
            self.disentangled(i, scores, (&q, &q_pos), (&k, &k_pos))?;
        }
        for (name, l) in names.qkv.iter().zip([q, k, v]) {
            self.push_linear(&format!("{p}.{name}"), l)?;
        }
        self.push_linear(&format!("{p}.{}", names.attn_out), attn_out)?;
        self.push_norm(&format!("{p}.{}", names.attn_norm), attn_norm)?;
        self.push_linear(&format!("{p}.{}", names.ffn_in), ffn_in)?;
        self.push_linear(&format!("{p}.{}", names.ffn_out), ffn_out)?;
        self.push_norm(&format!("{p}.{}", names.ffn_norm), ffn_norm)?;
        Ok(Some(out))
    }

    /// The task head after the last hidden state, if any.
    fn head(&mut self, h: &str) -> Result<(), OnnxError> {
        if let Some(ht) = self.fam.head_transform {
            return self.transformed_head(h, ht);
        }
        let mut token = self.linears_from(h)?;
        if token.len() > 1 {
            return Err(node_err(
                token[1].node,
                "several linear heads on the last hidden state",
            ));
        }
        if let Some(first) = token.pop() {
            // Masked LM: dense → activation → LayerNorm → decoder.
            if let Some(norm) = self.norm_after(&first.out, 10)? {
                let decoder = self.next_linear(&norm.out, 6)?.ok_or_else(|| {
                    node_err(norm.node, "no decoder after the masked-LM transform")
                })?;
                let names = mlm_names(self.family);
                self.push_linear(names.dense, first)?;
                self.push_norm(names.norm, norm)?;
                return self.push_decoder(decoder);
            }
            if let Some(next) = self.next_linear(&first.out, 8)? {
                return Err(node_err(
                    next.node,
                    "unrecognised head: a second linear follows the token-wise linear",
                ));
            }
            let qa = first.n_out() == 2
                && (self.graph.output.iter().any(|o| o.name == "start_logits")
                    || self.reaches_op(&first.out, "Split", 4));
            let name = if qa { "qa_outputs" } else { "classifier" };
            return self.push_linear(name, first);
        }
        // A head on the first token: pooling dense → activation → output projection.
        let Some(pooled) = self.next_linear(h, 6)? else {
            return Ok(()); // a bare encoder
        };
        let (pre, _, out) = sequence_head_names(self.family);
        // BERT's and ALBERT's poolers are modules of the base model.
        // DeBERTa's ContextPooler is the task model's (`pooler.dense`).
        let pre = if (pre == "pooler.dense" || pre == "pooler")
            && !matches!(self.family, ModelType::DebertaV2 | ModelType::Deberta)
        {
            format!("{}.{pre}", self.prefix)
        } else {
            pre.to_string()
        };
        match self.next_linear(&pooled.out, 6)? {
            Some(proj) => {
                self.push_linear(&pre, pooled)?;
                self.push_linear(out, proj)
            }
            None if self.family == ModelType::Bert => self.push_linear(&pre, pooled),
            None => Err(node_err(
                pooled.node,
                "unrecognised head: one linear on the first token",
            )),
        }
    }

    /// The masked-LM decoder: its weight unless it is the word embeddings' (tied), its bias.
    fn push_decoder(&mut self, decoder: Linear<'a>) -> Result<(), OnnxError> {
        let names = mlm_names(self.family);
        self.mark(decoder.node);
        let word = format!("{}.{}.weight", self.prefix, self.fam.embeddings.word);
        let tied = (self.imp.origins.get(&word)).is_some_and(|o| *o == decoder.weight.origin);
        if !tied {
            self.imp
                .push(format!("{}.weight", names.decoder), decoder.weight)?;
        }
        match decoder.bias {
            Some(b) => self.imp.push(names.bias.to_string(), b),
            None => Ok(()),
        }
    }

    /// The attention output projection after the context product, and the LayerNorm after
    /// it (post-norm layers).
    fn attention_output(
        &self,
        context: &'a NodeProto,
    ) -> Result<(Linear<'a>, Norm<'a>), OnnxError> {
        let attn_out = self
            .next_linear(output(context), 8)?
            .ok_or_else(|| node_err(context, "no output projection after the attention"))?;
        let attn_norm = self
            .norm_after(&attn_out.out, 4)?
            .ok_or_else(|| node_err(attn_out.node, "no LayerNorm after the attention output"))?;
        Ok((attn_out, attn_norm))
    }

    /// DeBERTa: where a projection's output enters the attention products, following every
    /// branch (Q also enters c2p, K also enters p2c). The entry into the scores product (or
    /// the only entry, V's); the other products are put in `others`.
    fn disentangled_entry(
        &self,
        t: &str,
        others: &mut Vec<(&'a NodeProto, usize)>,
    ) -> Option<(&'a NodeProto, usize)> {
        let mut entries = Vec::new();
        let mut frontier = vec![t.to_string()];
        for _ in 0..12 {
            let mut next = Vec::new();
            for t in &frontier {
                for u in self.users(t) {
                    if u.op_type == "MatMul" && !is_linear_site_input(self, u) {
                        entries.push((u, u.input.iter().position(|i| i == t)?));
                    } else if PASS_THROUGH.contains(&u.op_type.as_str()) {
                        next.push(output(u).to_string());
                    } else {
                        return None;
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        let scores: Vec<usize> = (0..entries.len())
            .filter(|&e| self.reaches_softmax(entries[e].0))
            .collect();
        match (scores.as_slice(), entries.len()) {
            ([s], _) => {
                let entry = entries.remove(*s);
                *others = entries;
                Some(entry)
            }
            ([], 1) => entries.pop(),
            _ => None,
        }
    }

    /// Whether `t` is computed from shapes and small constants only (no weight, no value).
    fn shape_only(&self, t: &str, depth: usize) -> bool {
        if let Some(c) = self.imp.consts.get(t) {
            return c.dims.iter().product::<i64>() <= 16;
        }
        match self.imp.producer.get(t) {
            Some(p) if matches!(p.op_type.as_str(), "Shape" | "Size") => true,
            Some(p) if depth < 40 => (p.input.iter())
                .filter(|i| !i.is_empty())
                .all(|i| self.shape_only(i, depth + 1)),
            _ => false,
        }
    }

    /// DeBERTa's disentangled attention in one layer: what is added to the scores must be
    /// the c2p product (Q times the relative embeddings projected by K's weight, or
    /// `pos_key_proj`'s) and / or the p2c product (K times them projected by Q's weight or
    /// `pos_query_proj`'s), each gathered at relative-distance indices computed from the
    /// sequence length only (`Range` / `Shape`, no weight). The relative embeddings and their
    /// LayerNorm are named (once, however many layers read them); a projection of them by
    /// Q's or K's own weight is that weight met again (pushed as ALBERT's shared layer is).
    fn disentangled(
        &mut self,
        i: usize,
        scores: &'a NodeProto,
        q: (&Linear<'a>, &[(&'a NodeProto, usize)]),
        k: (&Linear<'a>, &[(&'a NodeProto, usize)]),
    ) -> Result<(), OnnxError> {
        let DistanceBias::Disentangled {
            embeddings,
            norm,
            pos_key,
            pos_query,
        } = self.fam.distance_bias
        else {
            return Ok(());
        };
        let family = self.fam.class;
        let mut reached: Vec<&'a NodeProto> = Vec::new();
        for a in self.score_addends(scores) {
            self.relative_terms(&a, scores, &mut reached)?;
        }
        if reached.is_empty() {
            return Err(node_err(
                scores,
                format!("{family}'s disentangled attention (c2p / p2c products gathered at relative distances) is not added to these attention scores"),
            ));
        }
        for &r in &reached {
            if !(q.1.iter().chain(k.1)).any(|(p, _)| std::ptr::eq(*p, r)) {
                return Err(node_err(
                    r,
                    "a product added to the attention scores is neither Q's c2p nor K's p2c product",
                ));
            }
        }
        let names = layer_names(self.family, i);
        let p = self.prefix;
        let roles = [
            ("c2p", q.1, k.0, &names.qkv[1], pos_key),
            ("p2c", k.1, q.0, &names.qkv[0], pos_query),
        ];
        for (role, products, shared, shared_name, own) in roles {
            for &(product, slot) in products {
                if !reached.iter().any(|r| std::ptr::eq(*r, product)) {
                    return Err(node_err(
                        product,
                        format!("the {role} product is not added to the attention scores"),
                    ));
                }
                let other = input(product, 1 - slot.min(1));
                let proj = self.relative_projection(other, product, role)?;
                self.relative_table(&proj, embeddings, norm)?;
                let is_shared = proj.weight.origin == shared.weight.origin
                    || !matches!(
                        super::same_weight(
                            &ImportedTensor {
                                name: String::new(),
                                shape: shared.weight.shape.clone(),
                                data: shared.weight.data.clone(),
                                quant: shared.weight.quant.clone(),
                            },
                            &proj.weight
                        ),
                        super::Same::Differ
                    );
                // Stored otherwise than on the hidden-state path (onnxruntime's quantizers
                // leave a weight read through `Identity` in f32): pushed under the relative
                // projection's own name, so that it is computed as the file computes it.
                let same_storage = proj.weight.quant.is_some() == shared.weight.quant.is_some();
                if is_shared && same_storage {
                    // The layer's own projection met again: pushed once, as it reads the hidden
                    // state (with its integer codes where that one is quantized).
                    if proj.bias.as_ref().map(|b| &b.data) != shared.bias.as_ref().map(|b| &b.data)
                    {
                        return Err(node_err(
                            proj.node,
                            format!(
                                "the {role} projection has {shared_name}'s weight but another bias"
                            ),
                        ));
                    }
                    self.mark(proj.node);
                    continue;
                }
                let name = format!("{p}.{}", own.replace("{i}", &i.to_string()));
                self.push_linear(&name, proj)?;
            }
        }
        Ok(())
    }

    /// Back from an addend of the scores to the position products it adds (into `reached`):
    /// through gathers, transposes and scaling only; a product must be gathered.
    fn relative_terms(
        &self,
        t: &str,
        scores: &'a NodeProto,
        reached: &mut Vec<&'a NodeProto>,
    ) -> Result<(), OnnxError> {
        let mut stack = vec![(t.to_string(), false)];
        let mut seen = HashSet::new();
        while let Some((t, gathered)) = stack.pop() {
            if !seen.insert((t.clone(), gathered)) || seen.len() > 400 {
                continue;
            }
            if let Some(folded) = self.folded(&t)? {
                return Err(node_err(
                    scores,
                    format!(
                        "a constant of shape {:?} is added to the attention scores (a relative bias folded for one sequence length): export {} with a dynamic sequence axis",
                        folded.shape, self.fam.class
                    ),
                ));
            }
            if self.shape_only(&t, 0) || self.imp.consts.contains_key(t.as_str()) {
                continue;
            }
            let Some(&p) = self.imp.producer.get(t.as_str()) else {
                return Err(node_err(
                    scores,
                    format!("graph input `{t}` is added to the attention scores"),
                ));
            };
            match p.op_type.as_str() {
                "MatMul" if gathered => {
                    if !reached.iter().any(|r| std::ptr::eq(*r, p)) {
                        reached.push(p);
                    }
                }
                "MatMul" => {
                    return Err(node_err(
                        p,
                        "a product is added to the attention scores without being gathered at relative distances",
                    ))
                }
                "GatherElements" => {
                    self.relative_index(p)?;
                    stack.push((input(p, 0).to_string(), true));
                }
                op if TO_SCORES.contains(&op) => {
                    (p.input.iter().filter(|i| !i.is_empty()))
                        .for_each(|i| stack.push((i.clone(), gathered)));
                }
                op => {
                    return Err(node_err(
                        p,
                        format!("{op} in what is added to the attention scores; {} adds gathered c2p / p2c products only", self.fam.class),
                    ))
                }
            }
        }
        Ok(())
    }

    /// The index of a c2p / p2c gather: relative distances computed from the sequence length
    /// (a `Range` over a `Shape`), reading no weight and no input values.
    fn relative_index(&self, gather: &'a NodeProto) -> Result<(), OnnxError> {
        let mut stack = vec![input(gather, 1).to_string()];
        let mut seen = HashSet::new();
        let mut range = false;
        while let Some(t) = stack.pop() {
            if !seen.insert(t.clone()) || seen.len() > 400 {
                continue;
            }
            if let Some(c) = self.imp.consts.get(t.as_str()) {
                if c.dims.iter().product::<i64>() > 16 {
                    return Err(node_err(
                        gather,
                        format!("the relative-distance index reads the constant `{t}` ({:?}); it must be computed from the sequence length", c.dims),
                    ));
                }
                continue;
            }
            let Some(&p) = self.imp.producer.get(t.as_str()) else {
                return Err(node_err(
                    gather,
                    format!(
                        "the relative-distance index depends on the values of graph input `{t}`"
                    ),
                ));
            };
            match p.op_type.as_str() {
                "Shape" | "Size" => continue,
                "Range" => range = true,
                _ if is_linear_op(p) => {
                    return Err(node_err(
                        gather,
                        "the relative-distance index passes a linear layer",
                    ))
                }
                _ => {}
            }
            stack.extend(p.input.iter().filter(|i| !i.is_empty()).cloned());
        }
        if !range {
            return Err(node_err(
                gather,
                "the relative-distance index is not computed from a Range over the sequence",
            ));
        }
        Ok(())
    }

    /// The one linear layer that projects the relative embeddings into a c2p / p2c product.
    fn relative_projection(
        &self,
        t: &str,
        product: &'a NodeProto,
        role: &str,
    ) -> Result<Linear<'a>, OnnxError> {
        let mut found: Vec<&'a NodeProto> = Vec::new();
        let mut queue = VecDeque::from([t.to_string()]);
        let mut seen = HashSet::new();
        while let Some(t) = queue.pop_front() {
            if !seen.insert(t.clone()) || seen.len() > 60 {
                continue;
            }
            if self.shape_only(&t, 0) || self.imp.consts.contains_key(t.as_str()) {
                continue;
            }
            let Some(&p) = self.imp.producer.get(t.as_str()) else {
                continue;
            };
            if is_linear_op(p) {
                if !found.iter().any(|f| std::ptr::eq(*f, p)) {
                    found.push(p);
                }
                continue;
            }
            if FROM_RELATIVE.contains(&p.op_type.as_str()) {
                queue.extend(p.input.iter().filter(|i| !i.is_empty()).cloned());
            }
        }
        let err = |why: String| node_err(product, why);
        match found.as_slice() {
            [one] => self.site_of(one, true)?.ok_or_else(|| {
                err(format!(
                    "the {role} projection `{}` has no constant weight",
                    one.name
                ))
            }),
            [] => Err(err(format!(
                "the {role} product does not multiply by projected relative embeddings"
            ))),
            [a, b, ..] => Err(err(format!(
                "several linears (`{}`, `{}`) feed the {role} product",
                a.name, b.name
            ))),
        }
    }

    /// The relative-embedding table behind a c2p / p2c projection, and its LayerNorm when it
    /// has one (`norm_rel_ebd`), named once.
    fn relative_table(
        &mut self,
        proj: &Linear<'a>,
        embeddings: &str,
        norm_name: &str,
    ) -> Result<(), OnnxError> {
        let width = proj.weight.shape.get(1).copied().unwrap_or(0);
        let mut queue = VecDeque::from([input(proj.node, 0).to_string()]);
        let mut seen = HashSet::new();
        let mut table = None;
        while let Some(t) = queue.pop_front() {
            if !seen.insert(t.clone()) || seen.len() > 60 {
                continue;
            }
            if let Some(c) = self.imp.consts.get(t.as_str()) {
                if c.dims.len() == 2 && tensor::is_float(c.data_type) {
                    // Read through its LayerNorm, when the path came through the norm's output.
                    let mut norm = None;
                    for u in self.users(&t) {
                        if matches!(u.op_type.as_str(), "ReduceMean" | "LayerNormalization")
                            && input(u, 0) == t
                        {
                            norm = self.norm_at(u)?.filter(|n| seen.contains(&n.out));
                            if norm.is_some() {
                                break;
                            }
                        }
                    }
                    table = Some((t.clone(), norm));
                    break;
                }
                continue;
            }
            let Some(&p) = self.imp.producer.get(t.as_str()) else {
                continue;
            };
            if !matches!(p.op_type.as_str(), "Shape" | "Size") {
                queue.extend(p.input.iter().filter(|i| !i.is_empty()).cloned());
            }
        }
        let Some((name, n)) = table else {
            return Err(node_err(
                proj.node,
                "projects no table of relative embeddings",
            ));
        };
        let v = self
            .imp
            .resolve(&name, 0)?
            .ok_or_else(|| node_err(proj.node, format!("`{name}` is not a float table")))?;
        if v.shape.get(1) != Some(&width) {
            return Err(node_err(
                proj.node,
                format!(
                    "the relative embeddings `{name}` {:?} are not {width} wide",
                    v.shape
                ),
            ));
        }
        let p = self.prefix;
        self.imp.push(format!("{p}.{embeddings}"), v)?;
        if let Some(n) = n {
            self.push_norm(&format!("{p}.{norm_name}"), n)?;
        }
        Ok(())
    }

    /// The terms added to the attention scores between the product `Q·Kᵀ` and the Softmax,
    /// besides the running scores.
    fn score_addends(&self, product: &NodeProto) -> Vec<String> {
        let mut t = output(product).to_string();
        let mut out = Vec::new();
        for _ in 0..8 {
            let Some(u) = self.only_user(&t) else {
                break;
            };
            if u.op_type == "Softmax" {
                break;
            }
            if u.op_type == "Add" {
                out.extend(u.input.iter().filter(|i| **i != t).cloned());
            }
            t = output(u).to_string();
        }
        out
    }

    /// What `t` is computed from (at most a few hundred tensors back).
    fn ancestry(&self, t: &str) -> Ancestry<'a> {
        const LIMIT: usize = 400;
        let mut a = Ancestry::default();
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([t.to_string()]);
        while let Some(t) = queue.pop_front() {
            if seen.len() >= LIMIT || !seen.insert(t.clone()) {
                continue;
            }
            // A constant, or a value computed from constants only (`slopes * -1` unfolded).
            if self.imp.is_const(&t, 0) {
                let float = match self.imp.consts.get(t.as_str()) {
                    Some(c) => tensor::is_float(c.data_type),
                    None => true,
                };
                if float {
                    a.floats.push(t);
                }
                continue;
            }
            let Some(&p) = self.imp.producer.get(t.as_str()) else {
                continue;
            };
            if matches!(p.op_type.as_str(), "Shape" | "Size") {
                continue;
            }
            let table = input(p, 0);
            if matches!(p.op_type.as_str(), "Gather" | "GatherBlockQuantized")
                && self.imp.is_const(table, 0)
                && self
                    .imp
                    .consts
                    .get(table)
                    .is_some_and(|c| c.dims.len() == 2)
            {
                a.tables.push(p);
                queue.push_back(input(p, 1).to_string());
                continue;
            }
            queue.extend(p.input.iter().filter(|i| !i.is_empty()).cloned());
        }
        a
    }

    /// The family's distance bias among the terms added to the attention scores of one
    /// layer: MPNet's relative bias table is named (once, however many layers add it);
    /// Jina's ALiBi carries no weight, but its slopes must be the host's.
    fn distance_bias(&mut self, scores: &'a NodeProto) -> Result<(), OnnxError> {
        let addends = self.score_addends(scores);
        let family = self.fam.class;
        match self.fam.distance_bias {
            DistanceBias::None | DistanceBias::Disentangled { .. } => Ok(()),
            DistanceBias::RelativeBuckets { table, .. } => {
                let mut found: Vec<&'a NodeProto> = Vec::new();
                for a in &addends {
                    if let Some(folded) = self.folded(a)? {
                        return Err(node_err(
                            scores,
                            format!(
                                "the relative position bias is a constant of shape {:?} here (folded for one sequence length): export {family} with a dynamic sequence axis",
                                folded.shape
                            ),
                        ));
                    }
                    let anc = self.ancestry(a);
                    for g in anc.tables {
                        if !found.iter().any(|f| std::ptr::eq(*f, g)) {
                            found.push(g);
                        }
                    }
                }
                let g = match found.as_slice() {
                    [g] => *g,
                    [] => {
                        return Err(node_err(
                            scores,
                            format!("{family}'s relative position bias (a lookup of a [buckets, heads] table) is not added to these attention scores"),
                        ))
                    }
                    [a, b, ..] => {
                        return Err(node_err(
                            scores,
                            format!(
                                "several tables (`{}`, `{}`) are added to the attention scores",
                                a.name, b.name
                            ),
                        ))
                    }
                };
                let (value, _) = self
                    .imp
                    .embedding(g)?
                    .ok_or_else(|| node_err(g, "the relative bias table is not a constant"))?;
                self.mark(g);
                self.imp.push(format!("{}.{table}", self.prefix), value)
            }
            DistanceBias::Alibi => {
                let mut seen = Vec::new();
                for a in &addends {
                    if let Some(folded) = self.folded(a)? {
                        return alibi_of_folded(&folded).map_err(|why| node_err(scores, why));
                    }
                    let anc = self.ancestry(a);
                    if let Some(g) = anc.tables.first() {
                        return Err(node_err(
                            g,
                            format!("a table lookup is added to the attention scores, but {family} has ALiBi only"),
                        ));
                    }
                    for f in anc.floats {
                        let Ok(Some(v)) = self.imp.resolve(&f, 0) else {
                            continue;
                        };
                        // A precomputed table sliced to the sequence (the remote code's `alibi`
                        // buffer, `[1, heads, max, max][:, :, :L, :L]`).
                        let square = matches!(v.shape[..], [_, .., r, c] if r == c && r > 1);
                        if square {
                            return alibi_of_folded(&v).map_err(|why| node_err(scores, why));
                        }
                        let want: Vec<f32> =
                            alibi_slopes(v.data.len()).iter().map(|s| -s).collect();
                        if close(&v.data, &want) {
                            return Ok(());
                        }
                        if v.data.len() > 1 {
                            seen.push((f, v.data));
                        }
                    }
                }
                let why = match seen.first() {
                    Some((name, got)) if got.len() <= 64 => format!(
                        "the constant `{name}` added to the attention scores, {got:?}, is not -1 times the ALiBi slopes of {} heads, {:?}",
                        got.len(),
                        alibi_slopes(got.len())
                    ),
                    Some((name, got)) => format!(
                        "the constant `{name}` ({} values) added to the attention scores is not -1 times the ALiBi slopes",
                        got.len()
                    ),
                    None => format!(
                        "no ALiBi term (constant slopes times the query-key distance) is added to these attention scores, as {family} has"
                    ),
                };
                Err(node_err(scores, why))
            }
        }
    }

    /// `t` as a float constant of rank 3 or more (a bias folded for one sequence length).
    fn folded(&self, t: &str) -> Result<Option<Value>, OnnxError> {
        if !self.imp.is_const(t, 0) {
            return Ok(None);
        }
        Ok(self.imp.resolve(t, 0)?.filter(|v| v.shape.len() >= 3))
    }

    /// The gated MLP's split: the unbiased linear's output cut in two halves on its last
    /// axis (two `Slice`s or one `Split`), the activation on the first half only, the
    /// halves multiplied (`act(gate) * up`, as the plan's `Gate` op computes).
    fn gated_halves(&self, l: &Linear<'a>) -> Result<(), OnnxError> {
        let n = l.n_out();
        let width = n / 2;
        let err = |why: String| Err(node_err(l.node, why));
        let mut halves: [Option<String>; 2] = [None, None];
        for u in self.users(&l.out) {
            match u.op_type.as_str() {
                "Slice" => {
                    // Bounds computed from the output's width (`chunk(2)`) are evaluated.
                    let ints = |i: usize| self.width_ints(input(u, i), &l.out, n, 0);
                    let (Some(starts), Some(ends)) = (ints(1), ints(2)) else {
                        return err(format!("`{}` slices by computed bounds", u.name));
                    };
                    let axes = ints(3).unwrap_or_else(|| vec![-1]);
                    let steps = ints(4).unwrap_or_else(|| vec![1]);
                    let last_axis = matches!(axes.as_slice(), [-1] | [2]);
                    let at = |e: i64| e.clamp(0, n as i64) as usize;
                    let half = match (starts.as_slice(), ends.as_slice()) {
                        ([0], [e]) if at(*e) == width => 0,
                        ([s], [e]) if at(*s) == width && at(*e) == n => 1,
                        _ => usize::MAX,
                    };
                    if !last_axis || steps != [1] || half > 1 || halves[half].is_some() {
                        return err(format!(
                            "`{}` does not cut the {n} outputs in halves (starts {starts:?}, ends {ends:?}, axes {axes:?})",
                            u.name
                        ));
                    }
                    halves[half] = Some(output(u).to_string());
                }
                "Split" if u.output.len() == 2 => {
                    let axis = attr_i(u, "axis").unwrap_or(0);
                    let sizes = self.const_ints(input(u, 1));
                    let even = sizes.as_deref().is_none_or(|s| s == [width as i64; 2]);
                    if !matches!(axis, -1 | 2) || !even {
                        return err(format!(
                            "`{}` does not split the last axis in halves",
                            u.name
                        ));
                    }
                    halves = [Some(u.output[0].clone()), Some(u.output[1].clone())];
                }
                _ => {
                    return err(format!(
                        "the gated MLP's linear feeds `{}` ({}), expected two halves",
                        u.name, u.op_type
                    ))
                }
            }
        }
        let [Some(mut gate), Some(mut up)] = halves else {
            return err("the gated MLP's linear is not cut in two halves".into());
        };
        // GTE's `up_gate_proj` yields `[up | gate]`.
        if self.fam.layer.ffn_gate == FfnGate::Second {
            std::mem::swap(&mut gate, &mut up);
        }
        // `up` enters the product as it is; `gate` through the activation.
        let Some(mul) = self.only_user(&up).filter(|m| m.op_type == "Mul") else {
            return err("the second half of the gated MLP is not multiplied as it is".into());
        };
        let other = mul
            .input
            .iter()
            .find(|i| **i != up)
            .cloned()
            .unwrap_or_default();
        if other == gate
            || self.traces_to(&other, &up, 0)
            || !self.between_has(&gate, &other, &GATE_ACTS)
        {
            return err("the activation of the gated MLP is not on the first half of its linear (act(gate) * up)".into());
        }
        Ok(())
    }

    /// A small integer vector computed from constants and from the last dimension of
    /// `of` (`Shape(of)[-1]`, whose value is `width`), if `t` is one.
    fn width_ints(&self, t: &str, of: &str, width: usize, depth: usize) -> Option<Vec<i64>> {
        if let Some(c) = self.const_ints(t) {
            return Some(c);
        }
        let p = *self.imp.producer.get(t)?;
        if depth > 12 {
            return None;
        }
        let arg = |i: usize| self.width_ints(input(p, i), of, width, depth + 1);
        match p.op_type.as_str() {
            "Gather" => {
                let shape = *self.imp.producer.get(input(p, 0))?;
                let last = matches!(self.const_ints(input(p, 1)).as_deref(), Some([-1] | [2]));
                (shape.op_type == "Shape" && input(shape, 0) == of && last)
                    .then(|| vec![width as i64])
            }
            "Cast" | "Identity" | "Unsqueeze" | "Squeeze" => arg(0),
            "Concat" => {
                let parts: Option<Vec<Vec<i64>>> = (0..p.input.len()).map(&arg).collect();
                Some(parts?.concat())
            }
            "Add" | "Sub" | "Mul" | "Div" => {
                let (Some(a), Some(b)) = (arg(0), arg(1)) else {
                    return None;
                };
                let ([x], [y]) = (a.as_slice(), b.as_slice()) else {
                    return None;
                };
                let v = match p.op_type.as_str() {
                    "Add" => x + y,
                    "Sub" => x - y,
                    "Mul" => x * y,
                    _ if *y != 0 => x.div_euclid(*y),
                    _ => return None,
                };
                Some(vec![v])
            }
            _ => None,
        }
    }

    /// A small integer constant (shape operands), if `t` is one.
    fn const_ints(&self, t: &str) -> Option<Vec<i64>> {
        let c = self.imp.consts.get(t)?;
        (c.dims.iter().product::<i64>() <= 16)
            .then(|| tensor::to_i64(c).ok())
            .flatten()
    }

    /// Whether a node of one of `ops` lies on a path from `from` to `to` (within a few steps).
    fn between_has(&self, from: &str, to: &str, ops: &[&str]) -> bool {
        let mut frontier = vec![(from.to_string(), false)];
        let mut seen = HashSet::new();
        for _ in 0..12 {
            let mut next = Vec::new();
            for (t, hit) in &frontier {
                for u in self.users(t) {
                    let hit = *hit || ops.contains(&u.op_type.as_str());
                    if output(u) == to {
                        if hit {
                            return true;
                        }
                        continue;
                    }
                    if seen.insert((output(u).to_string(), hit)) {
                        next.push((output(u).to_string(), hit));
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        false
    }

    fn reaches_op(&self, t: &str, op: &str, limit: usize) -> bool {
        let mut frontier = vec![t.to_string()];
        for _ in 0..limit {
            let mut next = Vec::new();
            for tensor in &frontier {
                for u in self.users(tensor) {
                    if u.op_type == op {
                        return true;
                    }
                    next.extend(u.output.iter().cloned());
                }
            }
            frontier = next;
        }
        false
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

/// Whether `got` and `want` agree to f32 rounding.
fn close(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len()
        && (got.iter().zip(want)).all(|(g, w)| (g - w).abs() <= 1e-6 * w.abs().max(1e-30))
}

/// An ALiBi bias held as a constant `[.., heads, L, L]` (folded for one length, or a table
/// sliced to the sequence): it must be `-slope_h · |i - j|` with the host's slopes. Checked on
/// the leading 256 × 256 block of each head and its last row.
fn alibi_of_folded(v: &Value) -> Result<(), String> {
    let &[.., heads, rows, cols] = v.shape.as_slice() else {
        return Err(format!("constant bias of shape {:?}", v.shape));
    };
    let per_head = rows * cols;
    if rows != cols || heads == 0 || v.data.len() != heads * per_head {
        return Err(format!(
            "the constant bias of shape {:?} is not one [heads, L, L] ALiBi table",
            v.shape
        ));
    }
    let slopes = alibi_slopes(heads);
    let near = 0..rows.min(256);
    let cells = (near.clone())
        .flat_map(|i| near.clone().map(move |j| (i, j)))
        .chain((0..cols).map(|j| (rows - 1, j)));
    for (h, (slope, head)) in slopes.iter().zip(v.data.chunks_exact(per_head)).enumerate() {
        for (i, j) in cells.clone() {
            let got = head[i * cols + j];
            let want = -slope * i.abs_diff(j) as f32;
            if (got - want).abs() > 1e-6 * want.abs().max(1.0) {
                return Err(format!(
                    "the constant ALiBi table holds {got} for head {h}, query {i}, key {j}; the host's slopes give {want}"
                ));
            }
        }
    }
    Ok(())
}

/// Whether a `MatMul` multiplies by a constant (a linear layer, not an attention product).
fn is_linear_site_input(w: &Walker, u: &NodeProto) -> bool {
    w.imp.is_const(input(u, 1), 0)
}
