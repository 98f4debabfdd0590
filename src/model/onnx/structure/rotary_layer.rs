//! Post-norm layers with rotary positions (NomicBERT, GTE, RoFormer): Q, K and V apart (as
//! transformers 5 holds them) or from one fused linear (as their checkpoints store them), each
//! told apart by where it enters the attention products through its rotation; a gated MLP from
//! one linear cut in halves or from two (gate and up), or BERT's plain one. Weights the family stores stacked are
//! pushed stacked, their rows in the family's order.

use super::super::facts::SinusoidTable;
use super::prenorm::Entry;
use super::*;
use crate::model::family::layer_name;
use crate::model::weights::Quant;

/// The gated MLP's input side as the graph has it.
enum GateUp<'a> {
    /// One linear whose output is cut in halves.
    One(Box<Linear<'a>>),
    Two {
        gate: Box<Linear<'a>>,
        up: Box<Linear<'a>>,
    },
}

impl<'a> Walker<'a, '_> {
    pub(super) fn rotary_layer(&mut self, h: &str, i: usize) -> Result<Option<String>, OnnxError> {
        let linears = self.linears_from(h)?;
        let (qkv, context, facts) = match linears.len() {
            1 => match self.fused_attention(h)? {
                Some(a) => (vec![a.qkv], a.context, a.facts),
                None => return Ok(None),
            },
            3 => match self.apart_attention(linears)? {
                Some(found) => found,
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        let (attn_out, attn_norm) = self.attention_output(context)?;
        let mut ffn = self.linears_from(&attn_norm.out)?;
        let (gate_up, product) = match ffn.len() {
            1 => {
                let l = ffn.remove(0);
                if self.fam.mlp != Mlp::Plain {
                    self.gated_halves(&l)?;
                }
                let out = l.out.clone();
                (GateUp::One(Box::new(l)), out)
            }
            2 => {
                let (b, a) = (ffn.remove(1), ffn.remove(0));
                let (gate, up, product) = self.gate_and_up(a, b)?;
                let (gate, up) = (Box::new(gate), Box::new(up));
                (GateUp::Two { gate, up }, product)
            }
            n => {
                return Err(node_err(
                    attn_norm.node,
                    format!("{n} linear layers follow the attention LayerNorm, expected 1 or 2"),
                ))
            }
        };
        let ffn_out = self
            .next_linear(&product, 12)?
            .ok_or_else(|| node_err(attn_norm.node, "no second MLP linear after the gate"))?;
        let ffn_norm = self
            .norm_after(&ffn_out.out, 4)?
            .ok_or_else(|| node_err(ffn_out.node, "no LayerNorm after the MLP"))?;
        let out = ffn_norm.out.clone();
        if let Some(table) = facts.rotary.as_ref().and_then(|r| r.table.as_ref()) {
            self.imp.visited.insert(table.node.clone());
            self.push_rotary_table(table)?;
        }
        self.facts.layers.push(facts);
        let names = layer_names(self.family, i);
        let p = self.prefix;
        let t = self.fam.layer;
        match (t.fused_qkv, qkv.len()) {
            (Some(fused), _) => self.push_stacked(&format!("{p}.{}", layer_name(fused, i)), qkv)?,
            (None, 3) => {
                for (name, l) in names.qkv.iter().zip(qkv) {
                    self.push_linear(&format!("{p}.{name}"), l)?;
                }
            }
            (None, _) => {
                return Err(node_err(
                    context,
                    format!(
                        "Q, K and V come from one linear, but {} has three",
                        self.fam.class
                    ),
                ))
            }
        }
        self.push_linear(&format!("{p}.{}", names.attn_out), attn_out)?;
        self.push_norm(&format!("{p}.{}", names.attn_norm), attn_norm)?;
        let ffn_in = format!("{p}.{}", names.ffn_in);
        match (gate_up, t.ffn_gate) {
            (GateUp::One(l), _) if self.fam.mlp == Mlp::Plain => self.push_linear(&ffn_in, *l)?,
            (GateUp::One(l), FfnGate::First | FfnGate::Second) => self.push_linear(&ffn_in, *l)?,
            (GateUp::Two { gate, up }, FfnGate::Module(g)) => {
                self.push_linear(&format!("{p}.{}", layer_name(g, i)), *gate)?;
                self.push_linear(&ffn_in, *up)?;
            }
            (GateUp::Two { gate, up }, FfnGate::First) => {
                self.push_stacked(&ffn_in, vec![*gate, *up])?
            }
            (GateUp::Two { gate, up }, FfnGate::Second) => {
                self.push_stacked(&ffn_in, vec![*up, *gate])?
            }
            (GateUp::One(l), FfnGate::Module(_)) => {
                return Err(node_err(
                    l.node,
                    format!(
                        "the gated MLP is one linear here, two modules in {}",
                        self.fam.class
                    ),
                ))
            }
        }
        self.push_linear(&format!("{p}.{}", names.ffn_out), ffn_out)?;
        self.push_norm(&format!("{p}.{}", names.ffn_norm), ffn_norm)?;
        Ok(Some(out))
    }

    /// Q, K and V from three linears, by where each enters the products.
    #[allow(clippy::type_complexity)]
    fn apart_attention(
        &self,
        linears: Vec<Linear<'a>>,
    ) -> Result<
        Option<(
            Vec<Linear<'a>>,
            &'a NodeProto,
            super::super::facts::LayerFacts,
        )>,
        OnnxError,
    > {
        let mut slots: [Option<(Linear<'a>, Entry<'a>)>; 3] = [None, None, None];
        for l in linears {
            let Some(e) = self.product_entry(&l.out) else {
                return Ok(None);
            };
            let at = match (self.reaches_softmax(e.product), e.slot) {
                (true, 0) => 0,
                (true, _) => 1,
                (false, 1) => 2,
                _ => return Ok(None),
            };
            if slots[at].is_some() {
                return Err(node_err(
                    e.product,
                    "several projections enter the same attention input",
                ));
            }
            slots[at] = Some((l, e));
        }
        let [Some(q), Some(k), Some(v)] = slots else {
            return Ok(None);
        };
        if !std::ptr::eq(q.1.product, k.1.product) {
            return Err(node_err(
                q.1.product,
                "Q and K enter different score products",
            ));
        }
        let facts = self.attention_facts(&q.1, &k.1, &v.1)?;
        let context = v.1.product;
        Ok(Some((vec![q.0, k.0, v.0], context, facts)))
    }

    /// The gate and up projections of a two-linear gated MLP (`act(gate) * up`): `up` enters
    /// the product as it is, `gate` through the activation. With the product's output.
    fn gate_and_up(
        &self,
        a: Linear<'a>,
        b: Linear<'a>,
    ) -> Result<(Linear<'a>, Linear<'a>, String), OnnxError> {
        let product = |g: &Linear<'a>, u: &Linear<'a>| {
            let mul = self.only_user(&u.out).filter(|m| m.op_type == "Mul")?;
            let other = mul.input.iter().find(|i| **i != u.out)?;
            (*other != g.out && self.between_has(&g.out, output(mul), &GATE_ACTS))
                .then(|| output(mul).to_string())
        };
        if let Some(p) = product(&a, &b) {
            return Ok((a, b, p));
        }
        if let Some(p) = product(&b, &a) {
            return Ok((b, a, p));
        }
        Err(node_err(
            a.node,
            "two linears follow the attention LayerNorm, but not as a gated MLP (act(gate) * up)",
        ))
    }

    /// A graph's sinusoidal table (sines then cosines) as the plan's `rotary.table` (cosines
    /// then sines), once.
    fn push_rotary_table(&mut self, table: &SinusoidTable) -> Result<(), OnnxError> {
        const NAME: &str = "rotary.table";
        if self.imp.out.iter().any(|t| t.name == NAME) {
            return Ok(());
        }
        let half = table.width / 2;
        let rows = table.values.len() / table.width;
        let mut data = Vec::with_capacity(table.values.len());
        for row in table.values.chunks_exact(table.width) {
            data.extend_from_slice(&row[half..]);
            data.extend_from_slice(&row[..half]);
        }
        self.imp
            .push(NAME.into(), Value::new("", vec![rows, table.width], data))
    }

    /// `parts` as one linear, their rows in turn (the family's stacked module); a missing
    /// bias is zeros where another part has one.
    fn push_stacked(&mut self, name: &str, parts: Vec<Linear<'a>>) -> Result<(), OnnxError> {
        if parts.len() == 1 {
            return self.push_linear(name, parts.into_iter().next().unwrap());
        }
        let n_in = parts[0].weight.shape.get(1).copied().unwrap_or(0);
        if parts.iter().any(|l| l.weight.shape.get(1) != Some(&n_in)) {
            return Err(node_err(
                parts[0].node,
                "the parts of a stacked linear differ in inputs",
            ));
        }
        let rows: usize = parts.iter().map(|l| l.n_out()).sum();
        let biased = parts.iter().any(|l| l.bias.is_some());
        let (mut data, mut bias, mut quants) = (Vec::new(), Vec::new(), Vec::new());
        for l in &parts {
            self.mark(l.node);
            data.extend_from_slice(&l.weight.data);
            quants.push(l.weight.quant.clone());
            match &l.bias {
                Some(b) => bias.extend_from_slice(&b.data),
                None => bias.extend(std::iter::repeat_n(0.0, l.n_out())),
            }
        }
        let mut weight = Value::new(&parts[0].weight.origin, vec![rows, n_in], data);
        // Quantized alike, the codes stay; else the dequantized rows stand in f32.
        let codes: Option<Vec<Quant>> = quants.into_iter().collect();
        weight.quant = codes.and_then(|q| Quant::concat(q.iter()));
        self.imp.push(format!("{name}.weight"), weight)?;
        if biased {
            self.imp
                .push(format!("{name}.bias"), Value::new("", vec![rows], bias))?;
        }
        Ok(())
    }
}
