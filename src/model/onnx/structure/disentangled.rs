//! DeBERTa's disentangled attention: the c2p and p2c products added to the scores, their
//! gathers at relative distances computed from the sequence length only, the projections of
//! the relative embeddings and the table with its LayerNorm.

use super::*;

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

impl<'a> Walker<'a, '_> {
    /// DeBERTa: where a projection's output enters the attention products, following every
    /// branch (Q also enters c2p, K also enters p2c). The entry into the scores product (or
    /// the only entry, V's); the other products are put in `others`.
    pub(super) fn disentangled_entry(
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

    /// DeBERTa's disentangled attention in one layer: what is added to the scores must be
    /// the c2p product (Q times the relative embeddings projected by K's weight, or
    /// `pos_key_proj`'s) and / or the p2c product (K times them projected by Q's weight or
    /// `pos_query_proj`'s), each gathered at relative-distance indices computed from the
    /// sequence length only (`Range` / `Shape`, no weight). The relative embeddings and their
    /// LayerNorm are named (once, however many layers read them); a projection of them by
    /// Q's or K's own weight is that weight met again (pushed as ALBERT's shared layer is).
    pub(super) fn disentangled(
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
                        super::super::same_weight(
                            &ImportedTensor {
                                name: String::new(),
                                shape: shared.weight.shape.clone(),
                                data: shared.weight.data.clone(),
                                quant: shared.weight.quant.clone(),
                            },
                            &proj.weight
                        ),
                        super::super::Same::Differ
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
}
