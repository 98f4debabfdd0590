//! One post-norm encoder layer: Q, K and V told apart by where they enter the attention
//! products, the attention output with its residual and LayerNorm, the FFN pair (a gated MLP's
//! halves checked), residual and LayerNorm.

use super::*;

/// Ops between the scores product and the Softmax (scaling, mask).
const TO_SOFTMAX: &[&str] = &["Mul", "Div", "Add", "Sub", "Where", "Cast", "Reshape"];

impl<'a> Walker<'a, '_> {
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

    pub(super) fn reaches_softmax(&self, product: &NodeProto) -> bool {
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
    pub(super) fn layer(&mut self, h: &str, i: usize) -> Result<Option<String>, OnnxError> {
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

    /// The attention output projection after the context product, and the LayerNorm after
    /// it (post-norm layers).
    pub(super) fn attention_output(
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

    /// The gated MLP's split: the unbiased linear's output cut in two halves on its last
    /// axis (two `Slice`s or one `Split`), the activation on the first half only, the
    /// halves multiplied (`act(gate) * up`, as the plan's `Gate` op computes).
    pub(super) fn gated_halves(&self, l: &Linear<'a>) -> Result<(), OnnxError> {
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
}
