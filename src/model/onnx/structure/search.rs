//! Questions asked of the graph around a tensor: what it is computed from (graph inputs,
//! constants, shapes only), which ops lie on its way, and the small constants it holds.

use super::*;

impl<'a> Walker<'a, '_> {
    /// The constant operand of `t`'s only user when that user is an `op` node.
    pub(super) fn const_operand(
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
    pub(super) fn traces_to(&self, t: &str, name: &str, depth: usize) -> bool {
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
    pub(super) fn lookup_behind(&self, t: &str, depth: usize) -> Option<&'a NodeProto> {
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

    /// Whether `t` is computed from shapes and small constants only (no weight, no value).
    pub(super) fn shape_only(&self, t: &str, depth: usize) -> bool {
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

    /// `t` as a float constant of rank 3 or more (a bias folded for one sequence length).
    pub(super) fn folded(&self, t: &str) -> Result<Option<Value>, OnnxError> {
        if !self.imp.is_const(t, 0) {
            return Ok(None);
        }
        Ok(self.imp.resolve(t, 0)?.filter(|v| v.shape.len() >= 3))
    }

    /// A small integer vector computed from constants and from the last dimension of
    /// `of` (`Shape(of)[-1]`, whose value is `width`), if `t` is one.
    pub(super) fn width_ints(
        &self,
        t: &str,
        of: &str,
        width: usize,
        depth: usize,
    ) -> Option<Vec<i64>> {
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
    pub(super) fn const_ints(&self, t: &str) -> Option<Vec<i64>> {
        let c = self.imp.consts.get(t)?;
        (c.dims.iter().product::<i64>() <= 16)
            .then(|| tensor::to_i64(c).ok())
            .flatten()
    }

    /// Whether a node of one of `ops` lies on a path from `from` to `to` (within a few steps).
    pub(super) fn between_has(&self, from: &str, to: &str, ops: &[&str]) -> bool {
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

    pub(super) fn reaches_op(&self, t: &str, op: &str, limit: usize) -> bool {
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

    /// What `t` is computed from (at most a few hundred tensors back).
    pub(super) fn ancestry(&self, t: &str) -> Ancestry<'a> {
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
}

/// What a tensor is computed from, back to graph inputs, constants and shape queries (not
/// crossing `Shape`: a value computed from a tensor's shape only does not depend on it).
#[derive(Default)]
pub(super) struct Ancestry<'a> {
    /// `Gather` nodes reading a constant 2-D table.
    pub(super) tables: Vec<&'a NodeProto>,
    /// Float constants read (or values computed from constants only), by name.
    pub(super) floats: Vec<String>,
}
