//! What a graph computes that `config.json` also says: each layer's rotary frequencies and
//! sliding window, the sequence head's pooling. The walk reads them off the graph; loading
//! checks them against the config, so that a graph exported with other settings is refused
//! instead of run with the config's.

use super::super::config::ModelConfig;
use super::super::family::HeadPooling;

/// Rotary positions as a layer of the graph applies them.
#[derive(Debug, Clone, PartialEq)]
pub struct Rope {
    /// The angle per position of each rotated pair (`theta^(-2j/d)`, times a linear scale).
    pub inv_freq: Vec<f32>,
    /// What cos and sin are multiplied by (transformers' `attention_scaling`).
    pub scaling: f32,
    /// `(i, i + d/2)` pairs (rotate-half) rather than `(2i, 2i + 1)`.
    pub rotate_half: bool,
    /// V is rotated too.
    pub value: bool,
    /// A constant sinusoidal table the angles are gathered from (RoFormer), where the graph
    /// does not compute them (`inv_freq` is then empty).
    pub table: Option<SinusoidTable>,
}

/// `[positions, width]`: sines of `p · θ_j` then their cosines, as the graph holds them.
#[derive(Debug, Clone, PartialEq)]
pub struct SinusoidTable {
    /// The output of the `Gather` reading it.
    pub node: String,
    pub values: Vec<f32>,
    pub width: usize,
    /// How far a value may be from the exact one (a quantized table's rounding).
    pub tolerance: f64,
}

impl SinusoidTable {
    /// The first value that is not the sine or cosine of its angle under `inv_freq`.
    fn mismatch(&self, inv_freq: &[f64]) -> Option<(usize, usize)> {
        let half = self.width / 2;
        if inv_freq.len() != half {
            return Some((0, 0));
        }
        for (p, row) in self.values.chunks_exact(self.width).enumerate() {
            for (j, f) in inv_freq.iter().enumerate() {
                let a = p as f64 * f;
                let off = (row[j] as f64 - a.sin())
                    .abs()
                    .max((row[half + j] as f64 - a.cos()).abs());
                if off > self.tolerance {
                    return Some((p, j));
                }
            }
        }
        None
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LayerFacts {
    pub rotary: Option<Rope>,
    /// How far a query sees (`|i - j| <= w`) where the mask is a sliding window.
    pub window: Option<usize>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphFacts {
    /// Per layer, for the families whose walk reads them (empty otherwise).
    pub layers: Vec<LayerFacts>,
    pub pooling: Option<HeadPooling>,
}

impl GraphFacts {
    /// The first disagreement with `cfg`, in words.
    pub fn check(&self, cfg: &ModelConfig) -> Result<(), String> {
        if let Some(got) = self.pooling {
            if got != cfg.head_pooling {
                let say = |p: HeadPooling| match p {
                    HeadPooling::First => "its first token",
                    HeadPooling::Mean => "the mean of its tokens",
                    HeadPooling::Late => "every token, its logits averaged",
                };
                return Err(format!(
                    "the graph's sequence head reads {}, config.json's {}",
                    say(got),
                    say(cfg.head_pooling)
                ));
            }
        }
        for (i, layer) in self.layers.iter().enumerate() {
            let want = cfg.window(i);
            if layer.window != want {
                let say = |w: Option<usize>| match w {
                    Some(w) => format!("within {w} tokens either side"),
                    None => "globally".to_string(),
                };
                return Err(format!(
                    "layer {i} attends {} in the graph, {} by config.json",
                    say(layer.window),
                    say(want)
                ));
            }
            check_rope(i, layer.rotary.as_ref(), cfg)?;
        }
        Ok(())
    }
}

fn check_rope(i: usize, got: Option<&Rope>, cfg: &ModelConfig) -> Result<(), String> {
    let r = match (got, &cfg.rotary) {
        (None, None) => return Ok(()),
        (None, Some(_)) => {
            return Err(format!(
            "layer {i} of the graph applies no rotary positions to Q and K, which config.json has"
        ))
        }
        (Some(_), None) => {
            return Err(format!(
                "layer {i} of the graph applies rotary positions, which config.json does not have"
            ))
        }
        (Some(got), Some(r)) => (got, r),
    };
    let (got, r) = r;
    let theta = match cfg.window(i) {
        Some(_) => r.local_theta.unwrap_or(r.theta),
        None => r.theta,
    };
    let want: Vec<f64> = (0..r.dim / 2)
        .map(|j| r.position_scale * theta.powf(-2.0 * j as f64 / r.dim as f64))
        .collect();
    if let Some(table) = &got.table {
        if let Some((p, j)) = table.mismatch(&want) {
            return Err(format!(
                "layer {i}'s rotary table in the graph is not the sines and cosines of config.json's angles (base {theta}, {} rotated dimensions; position {p}, pair {j} differs)",
                r.dim
            ));
        }
    }
    let agree = got.table.is_some()
        || got.inv_freq.len() == want.len()
            && (got.inv_freq.iter().zip(&want))
                .all(|(&g, &w)| (g as f64 - w).abs() <= 1e-5 * w.abs() + 1e-12);
    if !agree {
        let show = |v: &[f64]| {
            let head: Vec<String> = v.iter().take(4).map(|x| format!("{x:.6e}")).collect();
            format!("{} values [{}, …]", v.len(), head.join(", "))
        };
        let got64: Vec<f64> = got.inv_freq.iter().map(|&x| x as f64).collect();
        return Err(format!(
            "layer {i}'s rotary frequencies in the graph ({}) are not those of config.json (base {theta}, {} rotated dimensions, scale {}: {})",
            show(&got64),
            r.dim,
            r.position_scale,
            show(&want)
        ));
    }
    if (got.scaling - 1.0).abs() > 1e-6 {
        return Err(format!(
            "layer {i} of the graph scales its rotary cos and sin by {}: a rope type webert does not build",
            got.scaling
        ));
    }
    if got.rotate_half == r.interleaved {
        let layout = |half: bool| if half { "rotate-half" } else { "interleaved" };
        return Err(format!(
            "layer {i} of the graph rotates {} pairs, config.json's family {}",
            layout(got.rotate_half),
            layout(!r.interleaved)
        ));
    }
    if got.value != r.value {
        return Err(format!(
            "layer {i} of the graph {} V, config.json {}",
            if got.value {
                "rotates"
            } else {
                "does not rotate"
            },
            if r.value { "rotates it" } else { "does not" }
        ));
    }
    Ok(())
}
