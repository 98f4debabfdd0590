//! Pre-norm layers (ModernBERT): `x = x + attn(norm(x))`, `x = x + mlp(norm(x))`, the first
//! layer's attention norm absent where the family says so, a final norm after the last layer.
//! Q, K and V come from one fused linear whose output is cut in thirds; each third is told
//! apart by where it enters the attention products, as in the post-norm walk. What the
//! graph computes besides weights (rotary frequencies, the sliding window) is read off as
//! [`LayerFacts`] for loading to check against the config.

use super::super::facts::LayerFacts;
use super::*;
use crate::model::family::layer_name;

/// One layer's attention: the fused projection and the two products.
pub(super) struct FusedAttention<'a> {
    pub(super) qkv: Linear<'a>,
    pub(super) context: &'a NodeProto,
    pub(super) facts: LayerFacts,
}

/// Where a third of the fused projection enters the attention products, and the nodes on
/// its way there.
pub(super) struct Entry<'a> {
    pub(super) product: &'a NodeProto,
    pub(super) slot: usize,
    pub(super) branch: Vec<&'a NodeProto>,
}

impl<'a> Walker<'a, '_> {
    /// Every layer from the embeddings' output `h` on, then the final norm; its output.
    pub(super) fn prenorm_layers(
        &mut self,
        mut h: String,
        final_norm: &str,
        first_attn_norm: bool,
    ) -> Result<String, OnnxError> {
        let mut i = 0;
        loop {
            let norm = self.norm_reading(&h)?;
            let normed = i > 0 || first_attn_norm;
            let x = match (&norm, normed) {
                (Some(n), true) => n.out.clone(),
                (None, true) => break,
                (_, false) => h.clone(),
            };
            self.imp.layer = Some(i);
            let layer = self.prenorm_layer(&h, &x, i)?;
            self.imp.layer = None;
            let Some((out, facts)) = layer else {
                break;
            };
            if let (Some(n), true) = (norm, normed) {
                let name = format!("{}.{}", self.prefix, layer_names(self.family, i).attn_norm);
                self.push_norm(&name, n)?;
            }
            self.facts.layers.push(facts);
            h = out;
            i += 1;
        }
        if i == 0 {
            return Err(OnnxError::NoEncoder(format!(
                "no pre-norm attention layer follows the embeddings norm (output `{h}`)"
            )));
        }
        let norm = self.norm_reading(&h)?.ok_or_else(|| {
            OnnxError::NoEncoder(format!("no final norm after the last layer (output `{h}`)"))
        })?;
        let out = norm.out.clone();
        self.push_norm(&format!("{}.{final_norm}", self.prefix), norm)?;
        Ok(out)
    }

    /// The norm that reads `t`, if any.
    fn norm_reading(&self, t: &str) -> Result<Option<Norm<'a>>, OnnxError> {
        for u in self.users(t) {
            if let Some(n) = self.norm_at(u)? {
                return Ok(Some(n));
            }
        }
        Ok(None)
    }

    /// Layer `i` reading the residual stream `h` (its attention reads `x`): the layer's
    /// output and what it computes besides weights, or `None` when `x` feeds no attention.
    fn prenorm_layer(
        &mut self,
        h: &str,
        x: &str,
        i: usize,
    ) -> Result<Option<(String, LayerFacts)>, OnnxError> {
        let Some(att) = self.fused_attention(x)? else {
            return Ok(None);
        };
        let attn_out = self
            .next_linear(output(att.context), 8)?
            .ok_or_else(|| node_err(att.context, "no output projection after the attention"))?;
        let mid = self.residual(&attn_out.out, h).ok_or_else(|| {
            node_err(
                attn_out.node,
                "the attention output is not added to the layer's input",
            )
        })?;
        let mlp_norm = self
            .norm_reading(&mid)?
            .ok_or_else(|| node_err(attn_out.node, "no norm before the MLP"))?;
        let mut ffn = self.linears_from(&mlp_norm.out)?;
        if ffn.len() != 1 {
            return Err(node_err(
                mlp_norm.node,
                format!(
                    "{} linear layers follow the MLP norm, expected 1",
                    ffn.len()
                ),
            ));
        }
        let ffn_in = ffn.remove(0);
        if matches!(self.fam.mlp, Mlp::Gated { .. } | Mlp::GatedHiddenAct) {
            self.gated_halves(&ffn_in)?;
        }
        let ffn_out = self
            .next_linear(&ffn_in.out, 12)?
            .ok_or_else(|| node_err(ffn_in.node, "no second MLP linear after the activation"))?;
        let out = self.residual(&ffn_out.out, &mid).ok_or_else(|| {
            node_err(
                ffn_out.node,
                "the MLP output is not added to the residual stream",
            )
        })?;
        let names = layer_names(self.family, i);
        let p = self.prefix;
        let fused = self.fam.layer.fused_qkv.ok_or_else(|| {
            node_err(
                att.qkv.node,
                "Q, K and V come from one linear, but the family has three",
            )
        })?;
        self.push_linear(&format!("{p}.{}", layer_name(fused, i)), att.qkv)?;
        self.push_linear(&format!("{p}.{}", names.attn_out), attn_out)?;
        self.push_norm(&format!("{p}.{}", names.ffn_norm), mlp_norm)?;
        self.push_linear(&format!("{p}.{}", names.ffn_in), ffn_in)?;
        self.push_linear(&format!("{p}.{}", names.ffn_out), ffn_out)?;
        Ok(Some((out, att.facts)))
    }

    /// `t + base` (either order): the sum's output.
    fn residual(&self, t: &str, base: &str) -> Option<String> {
        self.users(t)
            .into_iter()
            .find(|u| u.op_type == "Add" && u.input.iter().any(|i| i == base))
            .map(|u| output(u).to_string())
    }

    /// The attention fed by `x` through one fused Q/K/V linear, or `None` where `x` feeds
    /// something else.
    pub(super) fn fused_attention(&self, x: &str) -> Result<Option<FusedAttention<'a>>, OnnxError> {
        let mut linears = self.linears_from(x)?;
        if linears.len() != 1 {
            return Ok(None);
        }
        let qkv = linears.remove(0);
        let Some(thirds) = self.thirds(&qkv)? else {
            return Ok(None);
        };
        let mut entries = Vec::with_capacity(3);
        for t in &thirds {
            match self.product_entry(t) {
                Some(e) => entries.push(e),
                None => return Ok(None),
            }
        }
        let [q, k, v] = [&entries[0], &entries[1], &entries[2]];
        let ordered = std::ptr::eq(q.product, k.product)
            && (q.slot, k.slot, v.slot) == (0, 1, 1)
            && self.reaches_softmax(q.product)
            && !self.reaches_softmax(v.product);
        if !ordered {
            return Err(node_err(
                qkv.node,
                "the thirds of the fused Q/K/V projection do not enter the attention as Q, K and V, in that order",
            ));
        }
        let facts = self.attention_facts(q, k, v)?;
        Ok(Some(FusedAttention {
            qkv,
            context: v.product,
            facts,
        }))
    }

    /// The rotary positions on Q, K and V's way into the products, and the window of the
    /// scores' mask.
    pub(super) fn attention_facts(
        &self,
        q: &Entry<'a>,
        k: &Entry<'a>,
        v: &Entry<'a>,
    ) -> Result<LayerFacts, OnnxError> {
        let rq = self.rope_on(q)?;
        let rk = self.rope_on(k)?;
        if rq != rk {
            return Err(node_err(
                q.product,
                "Q and K are not rotated alike before the attention scores",
            ));
        }
        let rv = self.rope_on(v)?;
        let rotary = rq.map(|mut r| {
            r.value = rv.is_some();
            r
        });
        let window = self.window_of(q.product)?;
        Ok(LayerFacts { rotary, window })
    }

    /// The fused projection's output cut in three equal parts along the axis that holds Q, K
    /// and V whole (a `Split` in three, or three `Gather`s of indices 0, 1, 2 on a
    /// `[.., 3, heads, head_dim]` view), in order; `None` where it is not cut so.
    fn thirds(&self, l: &Linear<'a>) -> Result<Option<[String; 3]>, OnnxError> {
        let third = l.n_out() / 3;
        if third == 0 || !l.n_out().is_multiple_of(3) {
            return Ok(None);
        }
        let mut t = l.out.clone();
        // The view's dims, where a `Reshape` makes one: constants known, others `None`.
        let mut dims: Option<Vec<Option<i64>>> = None;
        for _ in 0..6 {
            let users = self.users(&t);
            let err = |u: &NodeProto, why: &str| Err(node_err(u, why.to_string()));
            match users.as_slice() {
                [u] if matches!(u.op_type.as_str(), "Reshape") => {
                    dims = self.shape_operand(input(u, 1));
                    t = output(u).to_string();
                }
                [u] if matches!(u.op_type.as_str(), "Cast" | "Identity") => {
                    t = output(u).to_string();
                }
                [u] if u.op_type == "Split" && u.output.len() == 3 => {
                    let axis = attr_i(u, "axis").unwrap_or(0);
                    let sizes = self.const_ints(input(u, 1));
                    let even = sizes
                        .as_deref()
                        .is_none_or(|s| s.iter().all(|&n| n * 3 == s.iter().sum::<i64>()));
                    if !even || !self.outer_third(dims.as_deref(), axis, third) {
                        return err(u, "the fused Q/K/V projection is split in a way not followed (expected three equal parts along the axis that holds Q, K and V whole)");
                    }
                    let o = &u.output;
                    return Ok(Some([o[0].clone(), o[1].clone(), o[2].clone()]));
                }
                gathers if gathers.len() == 3 && gathers.iter().all(|g| g.op_type == "Gather") => {
                    let mut out: [Option<String>; 3] = Default::default();
                    for g in gathers {
                        let axis = attr_i(g, "axis").unwrap_or(0);
                        let index = self.const_ints(input(g, 1));
                        let slot = match index.as_deref() {
                            Some([i]) if (0..3).contains(i) => *i as usize,
                            _ => return err(
                                g,
                                "a part of the fused Q/K/V projection is taken by a computed index",
                            ),
                        };
                        if !self.outer_third(dims.as_deref(), axis, third) || out[slot].is_some() {
                            return err(
                                g,
                                "the fused Q/K/V projection is cut in a way not followed",
                            );
                        }
                        out[slot] = Some(output(g).to_string());
                    }
                    let [Some(a), Some(b), Some(c)] = out else {
                        return Ok(None);
                    };
                    return Ok(Some([a, b, c]));
                }
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Whether cutting on `axis` takes whole thirds of the projection: the last axis of the
    /// unviewed output, or a view's axis of 3 followed by dims of `third` values in all.
    fn outer_third(&self, dims: Option<&[Option<i64>]>, axis: i64, third: usize) -> bool {
        let Some(dims) = dims else {
            return axis == -1 || axis == 2;
        };
        let rank = dims.len() as i64;
        let a = if axis < 0 { axis + rank } else { axis };
        if !(0..rank).contains(&a) || dims[a as usize] != Some(3) {
            return false;
        }
        // One `-1` or computed dim among the trailing dims (the heads, as `view(b, L, 3, -1,
        // d)` writes it, or einops' `(three h d)` with `h` computed from the width) takes what
        // the others leave.
        let rest = &dims[a as usize + 1..];
        let known: Vec<i64> = rest.iter().map(|d| d.unwrap_or(-1)).collect();
        let third = third as i64;
        match known.iter().filter(|&&d| d == -1).count() {
            0 => known.iter().product::<i64>() == third,
            1 => {
                let others: i64 = known.iter().filter(|&&d| d != -1).product();
                others > 0 && third % others == 0
            }
            _ => false,
        }
    }

    /// A `Reshape`'s target shape: a constant, or a `Concat` of scalars (constants where
    /// known).
    fn shape_operand(&self, t: &str) -> Option<Vec<Option<i64>>> {
        if let Some(c) = self.const_ints(t) {
            return Some(c.into_iter().map(Some).collect());
        }
        let p = self.imp.producer.get(t)?;
        if p.op_type != "Concat" {
            return None;
        }
        let dims = p.input.iter().map(|i| match self.const_ints(i).as_deref() {
            Some([v]) => Some(*v),
            _ => None,
        });
        Some(dims.collect())
    }

    /// Where `t` enters an attention product (a `MatMul` of two computed values), the
    /// nearest first, with every node on the way (not crossing a product or a linear).
    pub(super) fn product_entry(&self, t: &str) -> Option<Entry<'a>> {
        let mut first: Option<(&'a NodeProto, usize)> = None;
        let mut branch = Vec::new();
        let mut seen = HashSet::new();
        let mut frontier = vec![t.to_string()];
        for _ in 0..24 {
            let mut next = Vec::new();
            for s in &frontier {
                for u in self.users(s) {
                    if is_linear_op(u) {
                        if u.op_type == "MatMul"
                            && !is_linear_site_input(self, u)
                            && first.is_none()
                        {
                            first = u.input.iter().position(|i| i == s).map(|slot| (u, slot));
                        }
                        continue;
                    }
                    if let Some((nodes, part)) = self.through_stack(u, s) {
                        if seen.insert(part.clone()) {
                            branch.extend(nodes);
                            next.push(part);
                        }
                        continue;
                    }
                    if seen.insert(output(u).to_string()) {
                        branch.push(u);
                        next.extend(u.output.iter().cloned());
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        let (product, slot) = first?;
        Some(Entry {
            product,
            slot,
            branch,
        })
    }

    /// `s` stacked with others and taken back out (`torch.stack` then `[:, :, i]`, as
    /// NomicBERT's remote code returns its rotated Q and K): an `Unsqueeze` on axis `a`, a
    /// `Concat` on `a` of such parts, and `Gather`s of constant indices on `a`. The nodes on
    /// the way and the output of the `Gather` that takes `s`'s part.
    fn through_stack(&self, u: &'a NodeProto, s: &str) -> Option<(Vec<&'a NodeProto>, String)> {
        let axis_of = |n: &NodeProto| match self.const_ints(input(n, 1)).as_deref() {
            Some([a]) if n.input.len() > 1 => Some(*a),
            _ => attr_ints(n, "axes").and_then(|a| (a.len() == 1).then(|| a[0])),
        };
        if u.op_type != "Unsqueeze" || input(u, 0) != s {
            return None;
        }
        let axis = axis_of(u)?;
        let [stack] = self.users(output(u))[..] else {
            return None;
        };
        let parts = &stack.input;
        let is_part = |t: &String| {
            (self.imp.producer.get(t.as_str()))
                .is_some_and(|p| p.op_type == "Unsqueeze" && axis_of(p) == Some(axis))
        };
        if stack.op_type != "Concat"
            || attr_i(stack, "axis") != Some(axis)
            || !parts.iter().all(is_part)
        {
            return None;
        }
        let slot = parts.iter().position(|t| t == output(u))? as i64;
        let takers = self.users(output(stack));
        let taken = |g: &&NodeProto| g.op_type == "Gather" && attr_i(g, "axis") == Some(axis);
        if takers.is_empty() || !takers.iter().all(taken) {
            return None;
        }
        let mine = takers
            .iter()
            .find(|g| self.const_ints(input(g, 1)).as_deref() == Some(&[slot]))?;
        Some((vec![u, stack, *mine], output(mine).to_string()))
    }

    /// How far a query sees where the mask added to the scores of `scores` is a sliding
    /// window: `|i - j|` (an `Abs` of position differences) compared with a constant.
    fn window_of(&self, scores: &'a NodeProto) -> Result<Option<usize>, OnnxError> {
        let mut windows = Vec::new();
        for a in self.score_addends(scores) {
            let mut seen = HashSet::new();
            let mut queue = VecDeque::from([a]);
            while let Some(t) = queue.pop_front() {
                if seen.len() > 400 || !seen.insert(t.clone()) {
                    continue;
                }
                let Some(&p) = self.imp.producer.get(t.as_str()) else {
                    continue;
                };
                if matches!(p.op_type.as_str(), "Shape" | "Size") {
                    continue;
                }
                if p.op_type == "Abs" {
                    windows.push(self.window_bound(p)?);
                    continue;
                }
                queue.extend(p.input.iter().filter(|i| !i.is_empty()).cloned());
            }
        }
        windows.dedup();
        match windows.as_slice() {
            [] => Ok(None),
            [w] => Ok(Some(*w)),
            _ => Err(node_err(
                scores,
                format!("several sliding windows ({windows:?}) mask these attention scores"),
            )),
        }
    }

    /// The window of a comparison of `abs` with a constant: `<= w`, `< w + 1`, or their
    /// negations `> w`, `>= w + 1`.
    fn window_bound(&self, abs: &'a NodeProto) -> Result<usize, OnnxError> {
        for u in self.users(output(abs)) {
            let bound = match self.const_ints(input(u, 1)).as_deref() {
                Some([b]) if input(u, 0) == output(abs) => *b,
                _ => continue,
            };
            let w = match u.op_type.as_str() {
                "LessOrEqual" | "Greater" => bound,
                "Less" | "GreaterOrEqual" => bound - 1,
                _ => continue,
            };
            return usize::try_from(w).map_err(|_| node_err(u, "a sliding window below zero"));
        }
        Err(node_err(
            abs,
            "the attention mask takes a distance between positions, but not as a sliding window compared with a constant",
        ))
    }
}
