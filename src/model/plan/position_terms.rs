//! The plan's position terms: distance-bias tables (ALiBi, T5 buckets), DeBERTa's relative
//! embeddings and the rotary ops.

use super::builder::Builder;
use super::{BufId, Disentangled, DistanceTable, DynamicRotation, Linear, Op, Rotation, WeightId};
use crate::error::{Error, Result};
use crate::model::family::{layer_name, DistanceBias};
use crate::model::weights::Tensor;

/// DeBERTa's relative embeddings as every layer projects them.
pub(super) struct RelativeEmbeddings {
    pub(super) values: Vec<f32>,
    pub(super) rows: usize,
    pub(super) index: WeightId,
    pub(super) center: usize,
}

impl Builder<'_> {
    /// The family's distance bias as one `[heads, 2L - 1]` table over every distance a
    /// sequence of the longest length `L` has.
    pub(super) fn distance_table(&mut self) -> Result<Option<DistanceTable>> {
        let cfg = self.cfg;
        let (heads, len) = (cfg.num_heads, cfg.max_sequence_len());
        let values = match cfg.family().distance_bias {
            DistanceBias::None => return Ok(None),
            DistanceBias::RelativeBuckets {
                table,
                buckets,
                max_distance,
                ..
            } => {
                let rows = cfg.relative_buckets;
                let t = self.src.take(self.prefix(), table, &[rows, heads])?;
                crate::model::positions::relative_bias_table(
                    &t.data,
                    heads,
                    buckets,
                    max_distance,
                    len,
                )
            }
            DistanceBias::Alibi => crate::model::positions::alibi_table(heads, len),
            DistanceBias::Disentangled { .. } => return Ok(None),
        };
        let table = self.push(
            "attention.distance_bias",
            Tensor::new(vec![heads, 2 * len - 1], values),
        );
        Ok(Some(DistanceTable {
            table,
            center: len - 1,
        }))
    }

    /// DeBERTa's relative embeddings (`2 * span` rows, LayerNormed where the config says)
    /// and the index of the row each distance reads; `None` without disentangled attention.
    pub(super) fn relative_embeddings(&mut self) -> Result<Option<RelativeEmbeddings>> {
        let cfg = self.cfg;
        let (
            Some(d),
            DistanceBias::Disentangled {
                embeddings, norm, ..
            },
        ) = (cfg.disentangled, cfg.family().distance_bias)
        else {
            return Ok(None);
        };
        let h = cfg.hidden_size;
        let rows = 2 * d.span;
        // A table longer than the span is used in part, as the reference does.
        let mut values = match self.src.take(self.prefix(), embeddings, &[rows, h]) {
            Err(Error::TensorShape { got, .. })
                if got.len() == 2 && got[0] > rows && got[1] == h =>
            {
                self.src.take(self.prefix(), embeddings, &got)?.data
            }
            t => t?.data,
        };
        values.truncate(rows * h);
        if d.norm {
            let gamma = self
                .src
                .take(self.prefix(), &format!("{norm}.weight"), &[h])?;
            let beta = self
                .src
                .take(self.prefix(), &format!("{norm}.bias"), &[h])?;
            for row in values.chunks_exact_mut(h) {
                crate::model::positions::layer_norm(
                    row,
                    &gamma.data,
                    &beta.data,
                    cfg.layer_norm_eps,
                );
            }
        }
        let len = cfg.max_sequence_len();
        let index =
            crate::model::positions::disentangled_index(len, d.buckets, d.max_relative, d.span);
        let index = self.push(
            "attention.relative_index",
            Tensor::new(vec![2 * len - 1], index),
        );
        Ok(Some(RelativeEmbeddings {
            values,
            rows,
            index,
            center: len - 1,
        }))
    }

    /// Layer `i`'s projections of the relative embeddings: by its own key and query
    /// projections (rows `h..2h` and `0..h` of the fused `qkv`) where the config shares
    /// them, else by its `pos_key_proj` / `pos_query_proj`.
    pub(super) fn disentangled(
        &mut self,
        rel: &RelativeEmbeddings,
        qkv: Linear,
        i: usize,
    ) -> Result<Disentangled> {
        let cfg = self.cfg;
        let d = cfg
            .disentangled
            .expect("relative embeddings come with their settings");
        let h = cfg.hidden_size;
        let DistanceBias::Disentangled {
            pos_key, pos_query, ..
        } = cfg.family().distance_bias
        else {
            unreachable!("relative embeddings are DeBERTa's")
        };
        // With share_att_key the projection is Q's or K's own weight, unless the file holds
        // one of its own: an ONNX export whose relative path kept K / Q in f32 while the
        // hidden-state path was quantized (see onnx/structure.rs).
        let project = |b: &mut Self, own: &str, part: usize, name: &str| -> Result<WeightId> {
            let own_name = layer_name(own, i);
            let has_own = b.src.contains(b.prefix(), &format!("{own_name}.weight"));
            let (w, bias) = if d.share_key && !has_own {
                let w = b.weights[qkv.weight.0].data[part * h * h..(part + 1) * h * h].to_vec();
                let bias = qkv
                    .bias
                    .map(|id| b.weights[id.0].data[part * h..(part + 1) * h].to_vec());
                (w, bias)
            } else {
                let biased = match d.share_key {
                    true => b.src.contains(b.prefix(), &format!("{own_name}.bias")),
                    false => !cfg.family().unbiased.contains(&own),
                };
                let l = b.linear_with(&own_name, h, h, biased)?;
                let bias = l.bias.map(|id| b.weights[id.0].data.clone());
                (b.weights[l.weight.0].data.clone(), bias)
            };
            let bias = bias.unwrap_or_else(|| vec![0.0; h]);
            let values = crate::model::positions::project_rows(&rel.values, &w, &bias, h);
            Ok(b.push(&layer_name(name, i), Tensor::new(vec![rel.rows, h], values)))
        };
        let pos_key = match d.c2p {
            true => Some(project(
                self,
                pos_key,
                1,
                "encoder.layer.{i}.attention.pos_key",
            )?),
            false => None,
        };
        let pos_query = match d.p2c {
            true => Some(project(
                self,
                pos_query,
                0,
                "encoder.layer.{i}.attention.pos_query",
            )?),
            false => None,
        };
        Ok(Disentangled {
            pos_key,
            pos_query,
            index: rel.index,
            center: rel.center,
            rows: rel.rows,
        })
    }

    /// The rotary ops over `qkv`: the global layers' first, then the sliding-window layers'
    /// where they turn by a base of their own; none without rotary positions.
    pub(super) fn rotations(&mut self, qkv: BufId) -> Result<Vec<Op>> {
        let cfg = self.cfg;
        let Some(r) = cfg.rotary else {
            return Ok(Vec::new());
        };
        let len = cfg.max_sequence_len();
        let thetas = [Some(r.theta), r.local_theta.filter(|t| *t != r.theta)];
        let names = ["rotary.table", "rotary.table.local"];
        let mut ops = Vec::new();
        for (i, (theta, name)) in thetas.into_iter().zip(names).enumerate() {
            let Some(theta) = theta else { continue };
            let dynamic = r.dynamic.filter(|_| i == 0).map(|d| DynamicRotation {
                theta,
                position_scale: r.position_scale,
                trained: d.trained,
                factor: d.factor,
            });
            // A dynamic rotation's table holds the trained positions only.
            let len = dynamic.map_or(len, |d| d.trained.min(len));
            // An ONNX graph's own table (RoFormer's, checked against the config at import; in
            // a q8 file rounded to 8 bits), so that webert computes what the graph does.
            let imported = (self.src.find(self.prefix(), name))
                .map(|(_, t)| t.shape.clone())
                .filter(|s| i == 0 && s.len() == 2 && s[0] >= len && s[1] == r.dim);
            let table = match imported {
                Some(shape) => self.weight(name, &shape)?,
                None => {
                    let values =
                        crate::model::positions::rotary_table(len, r.dim, theta, r.position_scale);
                    self.push(name, Tensor::new(vec![len, r.dim], values))
                }
            };
            let rotation = Rotation {
                heads: cfg.num_heads,
                head_dim: cfg.head_dim(),
                dim: r.dim,
                interleaved: r.interleaved,
                parts: if r.value { 3 } else { 2 },
                table,
                dynamic,
            };
            ops.push(Op::Rotary { qkv, rotation });
        }
        Ok(ops)
    }
}
