//! Attention settings beyond the head count: DeBERTa's disentangled attention and the K/V
//! heads that query heads share.

use super::ModelConfig;
use crate::error::{Error, Result};
use crate::model::family::Family;
use serde_json::Value;

/// DeBERTa's relative attention settings (`relative_attention: true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DisentangledConfig {
    /// `position_buckets`; 0: distances are not log-bucketed.
    pub buckets: usize,
    /// `max_relative_positions` (`max_position_embeddings` where it is below 1).
    pub max_relative: usize,
    /// Half the rows of relative embeddings used: the buckets, else `max_relative`.
    pub span: usize,
    /// Content-to-position and position-to-content terms (`pos_att_type`).
    pub c2p: bool,
    pub p2c: bool,
    /// The layer's own key and query projections project the relative embeddings.
    pub share_key: bool,
    /// The relative embeddings are LayerNormed (`norm_rel_ebd: layer_norm`).
    pub norm: bool,
}

/// DeBERTa-v2's relative attention keys; `None` where `relative_attention` is off. What is
/// not built (the convolution of v2-xlarge, DeBERTa-v1's `p2p`) is refused by name.
pub(super) fn disentangled(
    file: &str,
    obj: &serde_json::Map<String, Value>,
) -> Result<Option<DisentangledConfig>> {
    let int = |k: &str| obj.get(k).and_then(Value::as_i64).unwrap_or(-1);
    if int("conv_kernel_size") > 0 {
        return Err(Error::config(
            file,
            "DeBERTa's convolution layer (`conv_kernel_size` > 0, v2-xlarge/xxlarge) is not supported",
        ));
    }
    if obj.get("relative_attention").and_then(Value::as_bool) != Some(true) {
        return Ok(None);
    }
    let kinds: Vec<String> = match obj.get("pos_att_type") {
        Some(Value::String(s)) => s.split('|').map(|k| k.trim().to_lowercase()).collect(),
        Some(Value::Array(a)) => (a.iter())
            .filter_map(Value::as_str)
            .map(|k| k.trim().to_lowercase())
            .collect(),
        _ => Vec::new(),
    };
    if let Some(k) = kinds
        .iter()
        .find(|k| !["c2p", "p2c", ""].contains(&k.as_str()))
    {
        return Err(Error::config(
            file,
            format!("pos_att_type `{k}` is not supported; supported: c2p, p2c"),
        ));
    }
    let max_position = int("max_position_embeddings");
    let max_relative = match int("max_relative_positions") {
        m if m < 1 => max_position,
        m => m,
    };
    let buckets = int("position_buckets").max(0);
    let span = if buckets > 0 { buckets } else { max_relative };
    if span < 1 {
        return Err(Error::config(file, "missing `max_relative_positions`"));
    }
    let norms = obj
        .get("norm_rel_ebd")
        .and_then(Value::as_str)
        .unwrap_or("none");
    Ok(Some(DisentangledConfig {
        buckets: buckets as usize,
        max_relative: max_relative.max(1) as usize,
        span: span as usize,
        c2p: kinds.iter().any(|k| k == "c2p"),
        p2c: kinds.iter().any(|k| k == "p2c"),
        share_key: obj.get("share_att_key").and_then(Value::as_bool) == Some(true),
        norm: norms
            .split('|')
            .any(|n| n.trim().eq_ignore_ascii_case("layer_norm")),
    }))
}

/// The K/V heads (`num_key_value_heads`, else one per query head), which must divide the
/// query heads; grouped heads only where Q, K and V are modules of their own (their rows are
/// repeated at load). A `head_dim` other than `hidden_size / num_attention_heads` is refused.
pub(super) fn kv_heads(
    file: &str,
    fam: &Family,
    obj: &serde_json::Map<String, Value>,
    cfg: &ModelConfig,
) -> Result<usize> {
    let heads = cfg.num_heads;
    if let Some(d) = obj.get("head_dim").and_then(Value::as_u64) {
        if d != cfg.head_dim() as u64 {
            return Err(Error::config(
                file,
                format!(
                    "head_dim {d} other than hidden_size / num_attention_heads ({}) is not supported",
                    cfg.head_dim()
                ),
            ));
        }
    }
    let kv = match obj.get("num_key_value_heads").and_then(Value::as_u64) {
        None => return Ok(heads),
        Some(kv) => kv as usize,
    };
    let separate = fam.layer.fused_qkv.is_none() && fam.layer.interleaved_qkv.is_none();
    if kv == heads {
        Ok(heads)
    } else if kv == 0 || !heads.is_multiple_of(kv) {
        Err(Error::config(
            file,
            format!("num_key_value_heads {kv} does not divide {heads} heads"),
        ))
    } else if !separate {
        Err(Error::config(
            file,
            format!(
                "num_key_value_heads {kv} of {heads} heads is not supported for {}",
                fam.names[0]
            ),
        ))
    } else {
        Ok(kv)
    }
}
