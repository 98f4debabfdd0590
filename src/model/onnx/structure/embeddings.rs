//! The embeddings: the lookup of `input_ids`, the other lookups summed into it, the
//! LayerNorm and the projection the family puts before or after it.

use super::*;

impl<'a> Walker<'a, '_> {
    pub(super) fn embeddings(&mut self) -> Result<String, OnnxError> {
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
}
