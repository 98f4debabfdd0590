//! The rotation applied to Q and K on their way into the attention products, read off the
//! graph: its cos and sin (`Cos` / `Sin` nodes, or gathers of a sinusoidal table) and the
//! frequencies or table they come from, for loading to check against the config.

use super::super::facts::{Rope, SinusoidTable};
use super::prenorm::Entry;
use super::*;

impl<'a> Walker<'a, '_> {
    /// The rotary positions applied on a third's way into its product: the branch's `Mul`s
    /// by a value computed from a `Cos` or `Sin`, or gathered from a sinusoidal table.
    pub(super) fn rope_on(&self, e: &Entry<'a>) -> Result<Option<Rope>, OnnxError> {
        let on_branch: HashSet<&str> = e.branch.iter().map(|n| output(n)).collect();
        let mut found: Vec<Trig<'a>> = Vec::new();
        for n in e.branch.iter().filter(|n| n.op_type == "Mul") {
            for operand in n.input.iter().filter(|i| !on_branch.contains(i.as_str())) {
                if let Some(trig) = self.trig_behind(operand) {
                    found.push(trig);
                }
            }
        }
        if found.is_empty() {
            return Ok(None);
        }
        let (Some(cos), Some(sin)) = (found.iter().find(|t| t.cos), found.iter().find(|t| !t.cos))
        else {
            return Err(node_err(
                e.product,
                "a rotation of Q or K multiplies by a cos without a sin, or a sin without a cos",
            ));
        };
        let table = match (cos.node.op_type.as_str(), std::ptr::eq(cos.node, sin.node)) {
            ("Gather", true) => Some(self.sinusoid_table(cos.node)?),
            ("Gather", false) => {
                return Err(node_err(
                    sin.node,
                    "cos and sin come from different rotary tables",
                ))
            }
            _ => None,
        };
        let inv_freq = match table {
            Some(_) => Vec::new(),
            None => self.rotary_frequencies(cos.node)?,
        };
        if table.is_none() && self.rotary_frequencies(sin.node)? != inv_freq
            || cos.scale != sin.scale
        {
            return Err(node_err(
                sin.node,
                "cos and sin of different angles rotate Q or K",
            ));
        }
        // Interleaved pairs are taken with a step of 2 (`x[..., 1::2]`); rotate-half cuts
        // halves and joins them back negated.
        let stepped = e.branch.iter().any(|n| {
            n.op_type == "Slice" && self.const_ints(input(n, 4)).is_some_and(|s| s == [2])
        });
        let rotate_half = !stepped
            && e.branch.iter().any(|n| n.op_type == "Neg")
            && e.branch.iter().any(|n| n.op_type == "Concat");
        Ok(Some(Rope {
            inv_freq,
            scaling: cos.scale,
            rotate_half,
            value: false,
            table,
        }))
    }

    /// The `Cos` or `Sin` node that `t` is computed from (through broadcasting, casts and
    /// constant scales), with the scale it is multiplied by; or the half of a sinusoidal
    /// table (`[positions, d]`: sines then cosines, RoFormer's) gathered at the positions.
    fn trig_behind(&self, t: &str) -> Option<Trig<'a>> {
        let mut t = t.to_string();
        let mut scale = 1.0f32;
        for _ in 0..12 {
            let p = *self.imp.producer.get(t.as_str())?;
            match p.op_type.as_str() {
                "Cos" | "Sin" => {
                    let cos = p.op_type == "Cos";
                    return Some(Trig {
                        node: p,
                        cos,
                        scale,
                    });
                }
                "Mul" | "Div" => {
                    let c = p.input.iter().position(|i| self.is_scalar_const(i))?;
                    let v = self.imp.resolve(input(p, c), 0).ok()??.data[0];
                    scale = if p.op_type == "Mul" {
                        scale * v
                    } else {
                        scale / v
                    };
                    t = input(p, 1 - c).to_string();
                }
                // RoFormer's table holds sines first (checked with the table)
                "Slice" if let Some(gather) = self.table_gather(input(p, 0)) => {
                    let cos = self.const_ints(input(p, 1)).is_none_or(|s| s != [0]);
                    return Some(Trig {
                        node: gather,
                        cos,
                        scale,
                    });
                }
                // the same half stacked with itself (each angle for both of its pair)
                "Concat" => {
                    let source = |i: &String| match self.imp.producer.get(i.as_str()) {
                        Some(u) if u.op_type == "Unsqueeze" => input(u, 0).to_string(),
                        _ => i.clone(),
                    };
                    let first = source(&p.input[0]);
                    if !p.input.iter().all(|i| source(i) == first) {
                        return None;
                    }
                    t = first;
                }
                "Cast" | "Unsqueeze" | "Squeeze" | "Expand" | "Reshape" | "Identity"
                | "Transpose" | "Slice" | "Gather" => t = input(p, 0).to_string(),
                _ => return None,
            }
        }
        None
    }

    /// The `Gather` of a constant 2-D table at positions `0..L` (a `Range` from 0 by 1) that
    /// `t` is, through reshapes (and a dequantization after the lookup).
    fn table_gather(&self, t: &str) -> Option<&'a NodeProto> {
        let mut t = t.to_string();
        for _ in 0..4 {
            let p = *self.imp.producer.get(t.as_str())?;
            match p.op_type.as_str() {
                "Unsqueeze" | "Reshape" | "Cast" | "Identity" | "DequantizeLinear" => {
                    t = input(p, 0).to_string()
                }
                "Gather" => {
                    let table = self.imp.consts.get(input(p, 0))?;
                    let range = self.imp.producer.get(input(p, 1))?;
                    let from_zero = range.op_type == "Range"
                        && self.const_ints(input(range, 0)).is_some_and(|v| v == [0])
                        && self.const_ints(input(range, 2)).is_some_and(|v| v == [1]);
                    return (table.dims.len() == 2 && from_zero).then_some(p);
                }
                _ => return None,
            }
        }
        None
    }

    fn is_scalar_const(&self, t: &str) -> bool {
        self.imp.is_const(t, 0)
            && self
                .imp
                .resolve(t, 0)
                .ok()
                .flatten()
                .is_some_and(|v| v.data.len() == 1)
    }

    /// The angle per position of each rotated pair: the one float vector the angles of a
    /// `Cos` / `Sin` are computed from (positions times it, the product repeated for the
    /// two halves).
    fn rotary_frequencies(&self, trig: &'a NodeProto) -> Result<Vec<f32>, OnnxError> {
        let mut vectors: Vec<Vec<f32>> = Vec::new();
        for f in self.ancestry(input(trig, 0)).floats {
            if let Some(v) = self.imp.resolve(&f, 0)? {
                if v.data.len() > 1 && !vectors.contains(&v.data) {
                    vectors.push(v.data);
                }
            }
        }
        match vectors.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(node_err(
                trig,
                "the rotary angles are not positions times a constant vector of frequencies",
            )),
            _ => Err(node_err(
                trig,
                "the rotary angles are computed from several constant vectors",
            )),
        }
    }

    /// The sinusoidal table `gather` reads (behind its dequantization), to be checked
    /// against the config's angles.
    fn sinusoid_table(&self, gather: &'a NodeProto) -> Result<SinusoidTable, OnnxError> {
        let (table, _) = (self.imp.embedding(gather)?)
            .ok_or_else(|| node_err(gather, "the rotary table is not a constant"))?;
        let width = table.shape[1];
        if width % 2 != 0 {
            return Err(node_err(gather, "the rotary table's width is odd"));
        }
        // A table stored in 8 bits is within half a step of 2 / 255 of the exact values.
        let float =
            (self.imp.consts.get(input(gather, 0))).is_some_and(|t| tensor::is_float(t.data_type));
        Ok(SinusoidTable {
            node: output(gather).to_string(),
            values: table.data,
            width,
            tolerance: if float { 1e-4 } else { 5e-3 },
        })
    }
}

/// Where a rotation's cos or sin comes from: a `Cos` / `Sin` node, or the `Gather` of a
/// sinusoidal table; with the constant it is scaled by.
pub(super) struct Trig<'a> {
    node: &'a NodeProto,
    cos: bool,
    scale: f32,
}
