//! A sentence-transformers folder as published (`modules.json`, the Pooling module's
//! `config.json`, `2_Normalize`, `sentence_bert_config.json`): how its authors pool and
//! normalise the encoder's output, read so that embeddings default to what
//! `SentenceTransformer(folder).encode` returns.

use crate::error::{Error, Result};
use serde_json::Value;

pub const MODULES: &str = "modules.json";
pub const SETTINGS: &str = "sentence_bert_config.json";

/// One of sentence-transformers' pooling modes (`pooling_mode_*` in the Pooling config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolingMode {
    Cls,
    Mean,
    Max,
    MeanSqrtLen,
    WeightedMean,
    LastToken,
}

impl PoolingMode {
    /// In the order sentence-transformers concatenates them, with their config keys.
    const KEYS: [(&'static str, PoolingMode); 6] = [
        ("pooling_mode_cls_token", PoolingMode::Cls),
        ("pooling_mode_max_tokens", PoolingMode::Max),
        ("pooling_mode_mean_tokens", PoolingMode::Mean),
        (
            "pooling_mode_mean_sqrt_len_tokens",
            PoolingMode::MeanSqrtLen,
        ),
        (
            "pooling_mode_weightedmean_tokens",
            PoolingMode::WeightedMean,
        ),
        ("pooling_mode_lasttoken", PoolingMode::LastToken),
    ];
}

/// What a sentence-transformers folder says about its embeddings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SentenceConfig {
    /// The Pooling module's modes (several are concatenated); empty without one.
    pub pooling: Vec<PoolingMode>,
    /// Whether a Normalize module follows.
    pub normalize: bool,
    /// `max_seq_length`: the length sentence-transformers cuts inputs to.
    pub max_seq_length: Option<usize>,
}

fn modules(origin: &str, text: &str) -> Result<Vec<Value>> {
    let file = format!("{origin}/{MODULES}");
    let v: Value = serde_json::from_str(text)
        .map_err(|e| Error::config(&file, format!("not valid JSON: {e}")))?;
    match v {
        Value::Array(list) => Ok(list),
        _ => Err(Error::config(&file, "is not a list of modules")),
    }
}

fn module_type(m: &Value) -> &str {
    m.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The Pooling module's config file that `modules.json` names (`1_Pooling/config.json`).
pub fn pooling_file(origin: &str, modules_json: &str) -> Result<Option<String>> {
    let list = modules(origin, modules_json)?;
    let Some(pooling) = list.iter().find(|m| module_type(m).ends_with(".Pooling")) else {
        return Ok(None);
    };
    let path = pooling.get("path").and_then(Value::as_str).unwrap_or("");
    let path = path.trim_matches('/');
    if path
        .split(['/', '\\'])
        .any(|part| part == ".." || part.contains(':'))
    {
        return Err(Error::config(
            &format!("{origin}/{MODULES}"),
            format!("the Pooling module's path `{path}` leaves the model folder"),
        ));
    }
    Ok(Some(match path.is_empty() {
        true => "config.json".to_string(),
        false => format!("{path}/config.json"),
    }))
}

impl SentenceConfig {
    /// From the folder's `modules.json` and, where present, its Pooling config and
    /// `sentence_bert_config.json`. Without the Pooling config (a folder copied in part) the
    /// pooling is left unsaid, for the caller's default.
    pub fn parse(
        origin: &str,
        modules_json: &str,
        pooling_json: Option<&str>,
        settings_json: Option<&str>,
    ) -> Result<Self> {
        let list = modules(origin, modules_json)?;
        let normalize = list.iter().any(|m| module_type(m).ends_with(".Normalize"));
        let mut pooling = Vec::new();
        if let (Some(file), Some(text)) = (pooling_file(origin, modules_json)?, pooling_json) {
            let file = format!("{origin}/{file}");
            let v: Value = serde_json::from_str(text)
                .map_err(|e| Error::config(&file, format!("not valid JSON: {e}")))?;
            // Newer folders name the mode (`pooling_mode: "mean"`) besides the flags.
            let named = v.get("pooling_mode").and_then(Value::as_str);
            pooling = (PoolingMode::KEYS.iter())
                .filter(|(key, _)| v.get(key).and_then(Value::as_bool) == Some(true))
                .map(|&(_, mode)| mode)
                .collect();
            if pooling.is_empty() {
                let mode = match named {
                    Some("cls") => PoolingMode::Cls,
                    Some("mean") => PoolingMode::Mean,
                    Some("max") => PoolingMode::Max,
                    Some("mean_sqrt_len_tokens") => PoolingMode::MeanSqrtLen,
                    Some("weightedmean") => PoolingMode::WeightedMean,
                    Some("lasttoken") => PoolingMode::LastToken,
                    other => {
                        return Err(Error::config(
                            &file,
                            format!("names no pooling mode webert knows ({other:?})"),
                        ))
                    }
                };
                pooling.push(mode);
            }
        }
        let max_seq_length = match settings_json {
            None => None,
            Some(text) => {
                let file = format!("{origin}/{SETTINGS}");
                let v: Value = serde_json::from_str(text)
                    .map_err(|e| Error::config(&file, format!("not valid JSON: {e}")))?;
                match v.get("max_seq_length") {
                    None | Some(Value::Null) => None,
                    Some(n) => Some(n.as_u64().filter(|&n| n > 0).ok_or_else(|| {
                        Error::config(&file, format!("max_seq_length {n} is not a length"))
                    })? as usize),
                }
            }
        };
        Ok(SentenceConfig {
            pooling,
            normalize,
            max_seq_length,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULES_JSON: &str = r#"[
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
    ]"#;

    #[test]
    fn published_folders_give_their_pooling() {
        assert_eq!(
            pooling_file("m", MODULES_JSON).unwrap().as_deref(),
            Some("1_Pooling/config.json")
        );
        let pooling = r#"{"word_embedding_dimension": 768, "pooling_mode_cls_token": false,
            "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false}"#;
        let c = SentenceConfig::parse(
            "m",
            MODULES_JSON,
            Some(pooling),
            Some(r#"{"max_seq_length": 384}"#),
        )
        .unwrap();
        assert_eq!(c.pooling, [PoolingMode::Mean]);
        assert!(c.normalize);
        assert_eq!(c.max_seq_length, Some(384));
        let named =
            SentenceConfig::parse("m", MODULES_JSON, Some(r#"{"pooling_mode": "cls"}"#), None)
                .unwrap();
        assert_eq!(named.pooling, [PoolingMode::Cls]);
        let both = r#"{"pooling_mode_mean_tokens": true, "pooling_mode_cls_token": true}"#;
        let c = SentenceConfig::parse("m", MODULES_JSON, Some(both), None).unwrap();
        assert_eq!(c.pooling, [PoolingMode::Cls, PoolingMode::Mean]);
    }

    #[test]
    fn broken_folders_are_named() {
        let partial = SentenceConfig::parse("m", MODULES_JSON, None, None).unwrap();
        assert!(partial.pooling.is_empty() && partial.normalize);
        let escape = MODULES_JSON.replace("1_Pooling", "../x");
        let e = SentenceConfig::parse("m", &escape, None, None).unwrap_err();
        assert!(e.to_string().contains("leaves the model folder"), "{e}");
        let e = SentenceConfig::parse("m", "{}", None, None).unwrap_err();
        assert!(e.to_string().contains("modules.json"), "{e}");
        let e = SentenceConfig::parse("m", MODULES_JSON, Some(r#"{"pooling_mode": "x"}"#), None)
            .unwrap_err();
        assert!(e.to_string().contains("pooling mode"), "{e}");
        let bad = Some(r#"{"max_seq_length": -1}"#);
        let mean = Some(r#"{"pooling_mode_mean_tokens": true}"#);
        let e = SentenceConfig::parse("m", MODULES_JSON, mean, bad).unwrap_err();
        assert!(e.to_string().contains("max_seq_length"), "{e}");
    }
}
