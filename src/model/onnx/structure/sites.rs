//! Finding the linear layers and the norms: a linear node with its bias attached, the
//! linears fed by a tensor or met first downstream of it, and the LayerNorm a tensor flows into
//! (one node or decomposed).

use super::*;

impl<'a> Walker<'a, '_> {
    /// A linear node's site with its bias attached: an inline bias, or an `Add` of a
    /// constant of the output width as the product's only user.
    fn site(&self, node: &'a NodeProto) -> Result<Option<Linear<'a>>, OnnxError> {
        self.site_of(node, false)
    }

    /// As [`Walker::site`]; with `const_input`, also a linear of a value computed from
    /// constants.
    pub(super) fn site_of(
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
    pub(super) fn linears_from(&self, h: &str) -> Result<Vec<Linear<'a>>, OnnxError> {
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
    pub(super) fn next_linear(
        &self,
        t: &str,
        limit: usize,
    ) -> Result<Option<Linear<'a>>, OnnxError> {
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
    pub(super) fn norm_after(&self, t: &str, limit: usize) -> Result<Option<Norm<'a>>, OnnxError> {
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

    pub(super) fn norm_at(&self, u: &'a NodeProto) -> Result<Option<Norm<'a>>, OnnxError> {
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
}
