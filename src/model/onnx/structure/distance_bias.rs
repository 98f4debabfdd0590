//! The distance bias added to the attention scores: MPNet's relative bucket table, named
//! once; Jina's ALiBi, whose slopes (computed in the graph or folded into a constant) must be
//! the host's.

use super::*;

impl<'a> Walker<'a, '_> {
    /// The terms added to the attention scores between the product `Q·Kᵀ` and the Softmax,
    /// besides the running scores.
    pub(super) fn score_addends(&self, product: &NodeProto) -> Vec<String> {
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

    /// The family's distance bias among the terms added to the attention scores of one
    /// layer: MPNet's relative bias table is named (once, however many layers add it);
    /// Jina's ALiBi carries no weight, but its slopes must be the host's.
    pub(super) fn distance_bias(&mut self, scores: &'a NodeProto) -> Result<(), OnnxError> {
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
}

/// Whether `got` and `want` agree to f32 rounding.
pub(super) fn close(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len()
        && (got.iter().zip(want)).all(|(g, w)| (g - w).abs() <= 1e-6 * w.abs().max(1e-30))
}

/// An ALiBi bias held as a constant `[.., heads, L, L]` (folded for one length, or a table
/// sliced to the sequence): it must be `-slope_h · |i - j|` with the host's slopes. Checked on
/// the leading 256 × 256 block of each head and its last row.
pub(super) fn alibi_of_folded(v: &Value) -> Result<(), String> {
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
