//! The Hugging Face `config.json`, normalised across BERT-family model types.

use super::activation::Activation;
use super::family::{self, DistanceBias, Mlp, Positions};
use super::family::{HeadPooling, ModelType};
use crate::error::{Error, Result};
use serde_json::Value;

mod architecture;
mod attention;
mod rope;

use architecture::{architecture_name, parse_architecture};
pub use architecture::{Architecture, HeadKind};
pub use attention::DisentangledConfig;
use attention::{disentangled, kv_heads};
use rope::rotary;
pub use rope::{DynamicNtk, RotaryConfig};

#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub model_type: ModelType,
    pub architecture: Architecture,
    pub vocab_size: usize,
    pub hidden_size: usize,
    /// ELECTRA's and ALBERT's embeddings can be narrower than the encoder (projected up).
    pub embedding_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    /// Heads of K and V (`num_key_value_heads`): each serves `num_heads / kv_heads` query
    /// heads; the plan repeats their rows at load.
    pub kv_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: Activation,
    /// The activation of a gated MLP's gate (`act(gate) * up`); `None` for a plain MLP.
    pub gate_act: Option<Activation>,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f32,
    pub pad_token_id: Option<u32>,
    /// RoBERTa-style position ids start after the padding index.
    pub position_offset: usize,
    /// Whether the embeddings add a learned position table.
    pub position_table: bool,
    /// Rows of a T5-style relative attention bias table (MPNet); 0 without one.
    pub relative_buckets: usize,
    /// DeBERTa's disentangled attention, where the config turns it on.
    pub disentangled: Option<DisentangledConfig>,
    pub rotary: Option<RotaryConfig>,
    /// Per layer: how far a query sees (`|i - j| <= w`) in a sliding-window layer; empty
    /// where every layer attends globally.
    pub windows: Vec<Option<usize>>,
    /// Modules (family templates or head names) without a bias.
    pub unbiased: Vec<&'static str>,
    pub head_pooling: HeadPooling,
    /// The pooled classification head's activation where the config chooses it.
    pub pooler_act: Option<Activation>,
    pub id2label: Vec<String>,
    pub multi_label: bool,
    /// A sentence-transformers folder's pooling and normalisation (`modules.json`).
    pub sentence: Option<super::sentence::SentenceConfig>,
}

impl ModelConfig {
    pub fn from_json(file: &str, text: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::config(file, format!("not valid JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| Error::config(file, "config.json is not a JSON object"))?;
        let mt = obj
            .get("model_type")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::config(file, "missing `model_type`"))?;
        let text_of = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
        let fam = family::find(mt, text_of).ok_or_else(|| {
            Error::UnsupportedModelType(mt.to_string(), family::supported_names())
        })?;
        let model_type = fam.model_type;
        let architecture = if fam.encoder_only {
            Architecture::Base
        } else {
            parse_architecture(obj.get("architectures"))?
        };
        let bert_only = matches!(
            architecture,
            Architecture::NextSentencePrediction | Architecture::PreTraining
        );
        if bert_only && !fam.next_sentence {
            // ELECTRA's *ForPreTraining is a replaced-token discriminator, not BERT's heads.
            return Err(Error::UnsupportedArchitecture(format!(
                "{} ({mt}): next-sentence and pre-training heads are BERT's only",
                architecture_name(model_type, architecture)
            )));
        }
        let get = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| obj.get(*k).and_then(Value::as_u64))
        };
        let need = |keys: &[&str]| {
            let x =
                get(keys).ok_or_else(|| Error::config(file, format!("missing `{}`", keys[0])))?;
            usize::try_from(x)
                .map_err(|_| Error::config(file, format!("`{}` = {x} is too large", keys[0])))
        };
        let keys = &fam.keys;
        let hidden_size = need(keys.hidden)?;
        let act_name = (keys.act.iter().find_map(|k| text_of(k)))
            .unwrap_or_else(|| keys.default_act.to_string());
        // A gated MLP's config may name the gate's kind (NomicBERT's `swiglu`).
        let act_name = match (fam.mlp, act_name.as_str()) {
            (Mlp::GatedHiddenAct, "swiglu") => "silu".to_string(),
            (Mlp::GatedHiddenAct, "geglu") => "gelu".to_string(),
            _ => act_name,
        };
        let pad_token_id = get(&["pad_token_id"]).and_then(|x| u32::try_from(x).ok());
        let position_offset = match fam.positions {
            Positions::AfterPadding => (pad_token_id.unwrap_or(1) as usize).saturating_add(1),
            Positions::AfterIndex(pad) => pad + 1,
            Positions::FromZero | Positions::None => 0,
        };
        let position_type = text_of("position_embedding_type");
        // GTE's remote code names its rotary positions `rope`.
        let default = if fam.rotary.is_some() {
            "rope"
        } else {
            "absolute"
        };
        let wanted = fam.selected_by.map_or(default, |(_, v)| v);
        let ignored = |p: &str| fam.ignored_position_types.contains(&p);
        if position_type
            .as_deref()
            .is_some_and(|p| p != wanted && !ignored(p))
        {
            return Err(Error::config(
                file,
                format!(
                    "position_embedding_type `{}` is not supported for {mt}; supported: `{wanted}`",
                    position_type.unwrap_or_default()
                ),
            ));
        }
        if fam.model_type == ModelType::Albert {
            for key in ["num_hidden_groups", "inner_group_num"] {
                if get(&[key]).is_some_and(|n| n != 1) {
                    return Err(Error::config(
                        file,
                        format!("ALBERT with `{key}` other than 1 is not supported"),
                    ));
                }
            }
        }
        if let Some(flag) =
            (fam.unbuilt_flags.iter()).find(|k| obj.get(**k).is_some_and(switched_on))
        {
            return Err(Error::config(
                file,
                format!("{mt} with `{flag}: {}` is not supported", obj[*flag]),
            ));
        }
        let gate_act = match fam.mlp {
            Mlp::Plain => None,
            Mlp::GatedHiddenAct => Some(Activation::parse(file, &act_name)?),
            Mlp::Gated { kind_key } => {
                let kind = text_of(kind_key)
                    .ok_or_else(|| Error::config(file, format!("missing `{kind_key}`")))?;
                Some(match kind.as_str() {
                    "geglu" => Activation::Gelu,
                    "reglu" => Activation::Relu,
                    other => {
                        return Err(Error::config(
                            file,
                            format!("unsupported {kind_key} `{other}`; supported: geglu, reglu"),
                        ))
                    }
                })
            }
        };
        let relative_buckets = match fam.distance_bias {
            DistanceBias::RelativeBuckets {
                rows_key, buckets, ..
            } => {
                let rows = match get(&[rows_key]) {
                    Some(_) => need(&[rows_key])?,
                    None => buckets,
                };
                if rows < buckets {
                    return Err(Error::config(
                        file,
                        format!("`{rows_key}` is {rows}; {mt} buckets distances into {buckets}"),
                    ));
                }
                rows
            }
            DistanceBias::None | DistanceBias::Alibi | DistanceBias::Disentangled { .. } => 0,
        };
        let disentangled = match fam.distance_bias {
            DistanceBias::Disentangled { .. } => disentangled(file, obj)?,
            _ => None,
        };
        let pooler_act = match fam.pooler_act_key.and_then(text_of) {
            Some(name) => Some(Activation::parse(file, &name)?),
            None => None,
        };
        let positions_off =
            (fam.positions_key).is_some_and(|k| obj.get(k).and_then(Value::as_bool) == Some(false));
        let mut cfg = ModelConfig {
            model_type,
            architecture,
            vocab_size: need(&["vocab_size"])?,
            hidden_size,
            embedding_size: match get(&["embedding_size"]) {
                Some(_) => need(&["embedding_size"])?,
                None => hidden_size,
            },
            num_layers: need(keys.layers)?,
            num_heads: need(keys.heads)?,
            kv_heads: 0,
            intermediate_size: need(keys.intermediate)?,
            hidden_act: Activation::parse(file, &act_name)?,
            gate_act,
            max_position_embeddings: need(keys.positions)?,
            type_vocab_size: if !fam.token_types {
                0
            } else {
                match get(&["type_vocab_size"]) {
                    Some(_) => need(&["type_vocab_size"])?,
                    None => fam.default_type_vocab_size,
                }
            },
            layer_norm_eps: (keys.norm_eps.iter())
                .find_map(|k| obj.get(*k).and_then(Value::as_f64))
                .unwrap_or(fam.default_norm_eps) as f32,
            pad_token_id,
            position_offset,
            position_table: fam.positions != Positions::None && !positions_off,
            relative_buckets,
            disentangled,
            rotary: None,
            windows: Vec::new(),
            unbiased: unbiased(fam, obj),
            head_pooling: head_pooling(file, fam, obj)?,
            pooler_act,
            id2label: parse_labels(file, obj.get("id2label"))?,
            multi_label: obj.get("problem_type").and_then(Value::as_str)
                == Some("multi_label_classification"),
            sentence: None,
        };
        if cfg.num_heads == 0 || !cfg.hidden_size.is_multiple_of(cfg.num_heads) {
            return Err(Error::config(
                file,
                format!(
                    "hidden size {} is not divisible by {} heads",
                    cfg.hidden_size, cfg.num_heads
                ),
            ));
        }
        cfg.kv_heads = kv_heads(file, fam, obj, &cfg)?;
        if let Some(r) = fam.rotary {
            if !cfg.head_dim().is_multiple_of(2) {
                return Err(Error::config(
                    file,
                    format!(
                        "rotary positions need an even head size, not {}",
                        cfg.head_dim()
                    ),
                ));
            }
            let (rotary, windows) = rotary(file, obj, &r, &cfg)?;
            if let Some(d) = rotary.dynamic {
                cfg.max_position_embeddings = d.limit;
            }
            cfg.rotary = Some(rotary);
            cfg.windows = windows;
        }
        if cfg.max_position_embeddings <= cfg.position_offset.saturating_add(2) {
            return Err(Error::config(file, "max_position_embeddings is too small"));
        }
        if cfg.weight_bytes().is_none() {
            return Err(Error::config(
                file,
                "its sizes (vocab_size, hidden_size, layers, ...) imply weights past 2^64 bytes",
            ));
        }
        Ok(cfg)
    }

    pub fn family(&self) -> &'static family::Family {
        self.model_type.family()
    }

    /// Bytes of the f32 weights these sizes imply (embeddings, every layer, the largest head),
    /// overflow-checked: what [`Self::check_budget`] holds against the budget before any
    /// weight is read.
    pub fn weight_bytes(&self) -> Option<u64> {
        let n = |x: usize| Some(x as u128);
        let (h, e, i, v) = (
            n(self.hidden_size)?,
            n(self.embedding_size)?,
            n(self.intermediate_size)?,
            n(self.vocab_size)?,
        );
        let positions = if self.position_table {
            n(self.max_position_embeddings)?
        } else {
            0
        };
        let tables = v
            .checked_add(positions)?
            .checked_add(n(self.type_vocab_size)?)?
            .checked_mul(e)?;
        let project = if e != h { e.checked_mul(h)? + h } else { 0 };
        let hh = h.checked_mul(h)?;
        // A gated MLP's input projection is twice as wide.
        let ffn_in = if self.gate_act.is_some() { 2 } else { 1 };
        let layer = (hh.checked_mul(4)?)
            .checked_add(h.checked_mul(i)?.checked_mul(1 + ffn_in)?)?
            .checked_add(i * ffn_in + 9 * h)?;
        // ALBERT's layers share one set of weights.
        let per_layer = self.family().layer.qkv[0].contains("{i}");
        let layers = layer.checked_mul(n(if per_layer { self.num_layers } else { 1 })?)?;
        // The `[heads, distances]` table of a distance bias, built at load.
        let distance = match (self.family().distance_bias, self.disentangled) {
            (DistanceBias::None, _) => 0,
            // Each layer's projected relative embeddings (keys and queries), built at load.
            (DistanceBias::Disentangled { .. }, Some(d)) => (n(d.span)? * 4)
                .checked_mul(h)?
                .checked_mul(n(self.num_layers)?)?,
            _ => n(self.num_heads)?.checked_mul(n(self.max_sequence_len())?.checked_mul(2)?)?,
        };
        let layers = layers.checked_add(distance)?;
        // The widest head: a masked-LM transform and bias, or a pooler and classifier.
        let labels = n(self.id2label.len().max(2))?;
        let head = hh + h.checked_mul(labels)?.checked_add(v)? + 4 * h;
        let params = tables
            .checked_add(project)?
            .checked_add(layers)?
            .checked_add(head)?;
        u64::try_from(params.checked_mul(4)?).ok()
    }

    /// An error naming the sizes when the weights they imply exceed `budget` bytes.
    pub fn check_budget(&self, budget: u64) -> Result<()> {
        super::budget::check(
            || {
                format!(
                    "a {} with vocab_size {}, hidden_size {}, {} layers, intermediate_size {} and \
                     max_position_embeddings {}: its f32 weights",
                    self.architecture_name(),
                    self.vocab_size,
                    self.hidden_size,
                    self.num_layers,
                    self.intermediate_size,
                    self.max_position_embeddings
                )
            },
            self.weight_bytes(),
            budget,
        )
    }

    /// The Hugging Face class name, e.g. `BertForSequenceClassification` or `BertModel`.
    pub fn architecture_name(&self) -> String {
        architecture_name(self.model_type, self.architecture)
    }

    /// Whether module `name` (a layer's, with its index, or a head's) has a bias.
    pub fn biased(&self, name: &str) -> bool {
        !(self.unbiased.iter()).any(|t| family::matches_template(t, name))
    }

    /// How far a query of layer `i` sees, where that layer attends within a window.
    pub fn window(&self, i: usize) -> Option<usize> {
        self.windows.get(i).copied().flatten()
    }

    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_heads
    }

    /// Longest sequence (special tokens included) the position table allows.
    pub fn max_sequence_len(&self) -> usize {
        self.max_position_embeddings - self.position_offset
    }

    /// Labels of the classifier head, `LABEL_i` when the config names none.
    pub fn labels(&self, n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                self.id2label
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("LABEL_{i}"))
            })
            .collect()
    }
}

/// The family's unbiased modules and those its config switches off.
fn unbiased(fam: &family::Family, obj: &serde_json::Map<String, Value>) -> Vec<&'static str> {
    let switched = fam
        .bias_switches
        .iter()
        .filter(|b| !obj.get(b.key).and_then(Value::as_bool).unwrap_or(b.default));
    let switched = switched.flat_map(|b| b.modules.iter().copied());
    fam.unbiased.iter().copied().chain(switched).collect()
}

fn head_pooling(
    file: &str,
    fam: &family::Family,
    obj: &serde_json::Map<String, Value>,
) -> Result<HeadPooling> {
    let Some(p) = fam.pooling else {
        return Ok(HeadPooling::First);
    };
    let found = (p.keys.iter()).find_map(|&k| obj.get(k).and_then(Value::as_str).map(|v| (k, v)));
    let Some((key, name)) = found else {
        return Ok(p.default);
    };
    match p.values.iter().find(|(n, _)| *n == name) {
        Some(&(_, pooling)) => Ok(pooling),
        None => {
            let names: Vec<&str> = p.values.iter().map(|(n, _)| *n).collect();
            Err(Error::config(
                file,
                format!(
                    "{key} `{name}` is not supported; supported: {}",
                    names.join(", ")
                ),
            ))
        }
    }
}

/// A switch that changes what a model computes: true, or a number other than 0.
fn switched_on(v: &Value) -> bool {
    v.as_bool() == Some(true) || v.as_f64().is_some_and(|x| x != 0.0)
}

fn parse_labels(file: &str, v: Option<&Value>) -> Result<Vec<String>> {
    let Some(map) = v.and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut labels = vec![String::new(); map.len()];
    for (k, name) in map {
        let i: usize = k.parse().ok().filter(|&i| i < map.len()).ok_or_else(|| {
            Error::config(
                file,
                format!("id2label key `{k}` is not an index below {}", map.len()),
            )
        })?;
        labels[i] = name.as_str().unwrap_or_default().to_string();
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modernbert(extra: &str) -> ModelConfig {
        let json = format!(
            r#"{{"model_type": "modernbert", "vocab_size": 50, "hidden_size": 64,
            "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 96,
            "max_position_embeddings": 128{extra}}}"#
        );
        ModelConfig::from_json("config.json", &json).unwrap()
    }

    #[test]
    fn rotary_settings_from_either_config_layout() {
        // The defaults: global every 3rd layer, windows of 128 / 2, bases 160000 and 10000.
        let c = modernbert("");
        assert_eq!(c.windows, [None, Some(64), Some(64), None]);
        let r = c.rotary.unwrap();
        assert_eq!(
            (r.dim, r.theta, r.local_theta),
            (16, 160_000.0, Some(10_000.0))
        );
        assert!(!r.interleaved && !r.value);
        // The Hub's keys.
        let c = modernbert(
            r#", "global_attn_every_n_layers": 2, "local_attention": 8,
            "global_rope_theta": 5e5, "local_rope_theta": 1e3"#,
        );
        assert_eq!(c.windows, [None, Some(4), None, Some(4)]);
        let r = c.rotary.unwrap();
        assert_eq!((r.theta, r.local_theta), (5e5, Some(1e3)));
        // transformers 5's, which win over the older keys.
        let c = modernbert(
            r#", "global_attn_every_n_layers": 2, "layer_types": ["sliding_attention",
            "full_attention", "full_attention", "sliding_attention"], "rope_parameters":
            {"full_attention": {"rope_type": "default", "rope_theta": 7.0},
             "sliding_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 3.0}}"#,
        );
        assert_eq!(c.windows, [Some(64), None, None, Some(64)]);
        let r = c.rotary.unwrap();
        assert_eq!(
            (r.theta, r.local_theta, r.position_scale),
            (7.0, Some(3.0), 0.25)
        );
        // A share of each head, rounded down to an even count.
        let c = modernbert(r#", "partial_rotary_factor": 0.4"#);
        assert_eq!(c.rotary.unwrap().dim, 6);
    }

    #[test]
    fn bias_switches_name_their_modules() {
        let c = modernbert(r#", "mlp_bias": true"#);
        assert!(c.biased("layers.3.mlp.Wi") && c.biased("layers.0.mlp.Wo"));
        assert!(!c.biased("layers.3.attn.Wqkv") && !c.biased("final_norm"));
        assert!(c.biased("decoder") && c.biased("classifier"));
        let c = modernbert(r#", "decoder_bias": false, "norm_bias": true"#);
        assert!(!c.biased("decoder") && c.biased("layers.1.mlp_norm"));
    }

    /// ModernBERT's Hub configs carry `position_embedding_type: absolute`, which its code never
    /// reads; GTE's remote code reads it (`absolute` there is a learned table, not built).
    #[test]
    fn position_type_keys_the_modeling_code_ignores() {
        let c = modernbert(r#", "position_embedding_type": "absolute""#);
        assert!(c.rotary.is_some());
        let published = include_str!("../../tests/bench/modernbert-base/config.json");
        let c = ModelConfig::from_json("config.json", published).unwrap();
        assert_eq!((c.max_sequence_len(), c.num_layers), (8192, 22));
        let gte = r#"{"model_type": "new", "vocab_size": 50, "hidden_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96,
            "max_position_embeddings": 128, "position_embedding_type": "absolute"}"#;
        let err = ModelConfig::from_json("config.json", gte).unwrap_err();
        assert!(
            err.to_string().contains("`absolute` is not supported"),
            "{err}"
        );
    }

    #[test]
    fn dynamic_ntk_from_either_config_layout() {
        let nomic = |extra: &str| {
            let json = format!(
                r#"{{"model_type": "nomic_bert", "vocab_size": 50, "n_embd": 64, "n_layer": 2,
                "n_head": 4, "n_inner": 96, "max_trained_positions": 2048,
                "n_positions": 8192{extra}}}"#
            );
            ModelConfig::from_json("config.json", &json)
        };
        // The remote code: no factor, the trained length is the limit and nothing scales.
        let c = nomic(r#", "rotary_scaling_factor": null"#).unwrap();
        assert_eq!(
            (c.max_sequence_len(), c.rotary.unwrap().dynamic),
            (2048, None)
        );
        let c = nomic(r#", "rotary_scaling_factor": 2"#).unwrap();
        assert_eq!(c.max_sequence_len(), 8192);
        let d = c.rotary.unwrap().dynamic.unwrap();
        assert_eq!((d.trained, d.factor), (2048, 2.0));
        let err = nomic(r#", "rotary_scaling_factor": "2""#).unwrap_err();
        assert!(err.to_string().contains("rotary_scaling_factor"), "{err}");
        // transformers 5: past max_position_embeddings, up to factor times it.
        let c = modernbert(r#", "rope_parameters": {"rope_type": "dynamic", "factor": 4.0}"#);
        let d = c.rotary.unwrap().dynamic.unwrap();
        assert_eq!((d.trained, c.max_sequence_len()), (128, 512));
        let per_kind = r#", "rope_parameters": {"full_attention": {"rope_type": "default"},
            "sliding_attention": {"rope_type": "dynamic", "factor": 2.0}}"#;
        let json = format!(
            r#"{{"model_type": "modernbert", "vocab_size": 50, "hidden_size": 64,
            "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 96,
            "max_position_embeddings": 128{per_kind}}}"#
        );
        let err = ModelConfig::from_json("config.json", &json).unwrap_err();
        assert!(err.to_string().contains("sliding_attention"), "{err}");
    }
}
