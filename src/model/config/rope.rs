//! Rotary positions as a config sets them: transformers 5's `rope_parameters` (flat or per
//! layer type) before the family's own keys, the sliding-window layers' base, linear and dynamic
//! NTK scaling.

use super::ModelConfig;
use crate::error::{Error, Result};
use crate::model::family::{DynamicKeys, Rotary};
use serde_json::Value;

/// Rotary positions as a config sets them (see [`Rotary`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RotaryConfig {
    /// Rotated dimensions of each head (even; the head's size unless partial).
    pub dim: usize,
    pub theta: f64,
    pub interleaved: bool,
    /// V is rotated as well.
    pub value: bool,
    /// The base of sliding-window layers, where it differs (ModernBERT's local layers).
    pub local_theta: Option<f64>,
    /// Positions are multiplied by this before turning (`rope_type: linear`: 1 / factor).
    pub position_scale: f64,
    /// Dynamic NTK scaling of the global base past the trained length.
    pub dynamic: Option<DynamicNtk>,
}

/// Dynamic NTK scaling: a sequence of `n > trained` tokens turns by the base
/// `theta · (factor · n / trained − (factor − 1))^(d / (d − 2))`; `limit` is the longest input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DynamicNtk {
    pub trained: usize,
    pub factor: f64,
    pub limit: usize,
}

/// The rotary settings of a config, and the window of each layer where some attend locally.
/// Bases come from transformers 5's `rope_parameters` (flat, or per layer type), else the
/// family's keys; scaling other than `linear` and GTE's fixed `ntk` is refused by name.
pub(super) fn rotary(
    file: &str,
    obj: &serde_json::Map<String, Value>,
    r: &Rotary,
    model: &ModelConfig,
) -> Result<(RotaryConfig, Vec<Option<usize>>)> {
    let (head_dim, layers) = (model.head_dim(), model.num_layers);
    let params = obj
        .get("rope_parameters")
        .or_else(|| obj.get("rope_scaling"))
        .filter(|v| v.is_object());
    let (global, local) = match params {
        Some(p) if p.get("full_attention").is_some() || p.get("sliding_attention").is_some() => {
            (p.get("full_attention"), p.get("sliding_attention"))
        }
        p => (p, p),
    };
    let f64_of = |v: Option<&Value>, k: &str| v.and_then(|v| v.get(k)).and_then(Value::as_f64);
    let key_f64 = |k: &str| obj.get(k).and_then(Value::as_f64);
    let mut theta = f64_of(global, "rope_theta")
        .or_else(|| r.theta_keys.iter().find_map(|k| key_f64(k)))
        .unwrap_or(r.theta);
    let mut position_scale = 1.0;
    let mut ntk = None;
    let mut dynamic = None;
    for (i, p) in [global, local].into_iter().enumerate() {
        let Some(p) = p else { continue };
        let kind = (p.get("rope_type").or_else(|| p.get("type"))).and_then(Value::as_str);
        match kind {
            None | Some("default") => {}
            // transformers 5: past `max_position_embeddings` the base grows with the length;
            // the factor is how far the context stretches.
            Some("dynamic") if i == 0 || global.is_some_and(|g| std::ptr::eq(g, p)) => {
                let factor = positive_factor(file, p, "dynamic")?;
                let trained = model.max_position_embeddings;
                let limit = (trained as f64 * factor.max(1.0)) as usize;
                dynamic = Some(DynamicNtk {
                    trained,
                    factor,
                    limit,
                });
            }
            Some("dynamic") => {
                return Err(Error::config(
                    file,
                    "rope_type `dynamic` on sliding_attention layers is not supported",
                ))
            }
            Some("linear") => position_scale = 1.0 / positive_factor(file, p, "linear")?,
            // GTE's remote code: a fixed NTK scaling (`mixed_b` makes it another).
            Some("ntk") if p.get("mixed_b").is_none_or(Value::is_null) => {
                ntk = Some(positive_factor(file, p, "ntk")?)
            }
            Some(other) => {
                return Err(Error::config(
                    file,
                    format!(
                        "rope_type `{other}` is not supported; supported: default, linear, dynamic, ntk (without mixed_b)"
                    ),
                ))
            }
        }
    }
    let fraction = f64_of(global, "partial_rotary_factor")
        .or_else(|| key_f64("partial_rotary_factor"))
        .or_else(|| key_f64("rotary_emb_fraction"))
        .unwrap_or(1.0);
    let dim = ((head_dim as f64 * fraction) as usize) & !1;
    if dim == 0 || dim > head_dim {
        return Err(Error::config(
            file,
            format!("partial_rotary_factor {fraction} leaves no rotated dimensions"),
        ));
    }
    // `inv_freq = (theta · f)^(-2j/d) / f^(2/d)`: a larger base, every angle scaled alike.
    if let Some(f) = ntk {
        theta *= f;
        position_scale *= f.powf(-2.0 / dim as f64);
    }
    if let Some(keys) = r.dynamic.filter(|_| dynamic.is_none()) {
        dynamic = dynamic_by_keys(file, obj, keys)?;
    }
    if dynamic.is_some() && dim <= 2 {
        return Err(Error::config(
            file,
            "dynamic NTK scaling needs more than 2 rotated dimensions",
        ));
    }
    let value = r
        .value_key
        .and_then(|k| obj.get(k))
        .and_then(Value::as_bool);
    let mut cfg = RotaryConfig {
        dim,
        theta,
        interleaved: r.interleaved,
        value: value == Some(true),
        local_theta: None,
        position_scale,
        dynamic,
    };
    let Some(l) = r.local else {
        return Ok((cfg, Vec::new()));
    };
    let size = |k: &str, default: usize| {
        obj.get(k)
            .and_then(Value::as_u64)
            .map_or(default, |n| n as usize)
    };
    let half = size(l.window_key, l.default_window) / 2;
    let windows = match obj.get("layer_types").and_then(Value::as_array) {
        Some(kinds) => {
            if kinds.len() != layers {
                return Err(Error::config(
                    file,
                    format!("`layer_types` lists {} layers of {layers}", kinds.len()),
                ));
            }
            let kind = |k: &Value| {
                match k.as_str() {
                Some("full_attention") => Ok(None),
                Some("sliding_attention") => Ok(Some(half)),
                _ => Err(Error::config(
                    file,
                    format!(
                        "layer type {k} is not supported; supported: full_attention, sliding_attention"
                    ),
                )),
            }
            };
            kinds.iter().map(kind).collect::<Result<Vec<_>>>()?
        }
        None => {
            let every = size(l.every_key, l.default_every).max(1);
            (0..layers)
                .map(|i| (i % every != 0).then_some(half))
                .collect()
        }
    };
    cfg.local_theta = Some(
        f64_of(local, "rope_theta")
            .or_else(|| key_f64(l.theta_key))
            .unwrap_or(l.theta),
    );
    Ok((cfg, windows))
}

/// NomicBERT's remote code: `rotary_scaling_factor` (null or 0: none) past
/// `max_trained_positions`, up to `n_positions`.
pub(super) fn dynamic_by_keys(
    file: &str,
    obj: &serde_json::Map<String, Value>,
    keys: DynamicKeys,
) -> Result<Option<DynamicNtk>> {
    let factor = match obj.get(keys.factor) {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v.as_f64().filter(|f| *f >= 0.0).ok_or_else(|| {
            Error::config(
                file,
                format!("`{}` must be a non-negative number, not {v}", keys.factor),
            )
        })?,
    };
    if factor == 0.0 {
        return Ok(None);
    }
    let size = |k: &str| obj.get(k).and_then(Value::as_u64).map(|n| n as usize);
    let trained = size(keys.trained).filter(|&n| n > 0).ok_or_else(|| {
        Error::config(
            file,
            format!("`{}` needs a positive `{}`", keys.factor, keys.trained),
        )
    })?;
    let limit = size(keys.extended).unwrap_or((trained as f64 * factor.max(1.0)) as usize);
    Ok(Some(DynamicNtk {
        trained,
        factor,
        limit: limit.max(trained),
    }))
}

pub(super) fn positive_factor(file: &str, p: &Value, kind: &str) -> Result<f64> {
    (p.get("factor").and_then(Value::as_f64))
        .filter(|f| *f > 0.0)
        .ok_or_else(|| {
            Error::config(
                file,
                format!("rope_type `{kind}` needs a positive `factor`"),
            )
        })
}
