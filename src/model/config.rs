//! The Hugging Face `config.json`, normalised across BERT-family model types.

use super::activation::Activation;
use super::family::{self, DistanceBias, DynamicKeys, Mlp, Positions, Rotary};
use super::family::{HeadPooling, ModelType};
use crate::error::{Error, Result};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    Base,
    SequenceClassification,
    TokenClassification,
    QuestionAnswering,
    MaskedLm,
    /// BERT's pooler and `cls.seq_relationship` (is sentence B the one after A?).
    NextSentencePrediction,
    /// BERT's two pre-training heads: the masked LM and next-sentence prediction.
    PreTraining,
}

/// What a head of the plan computes; a checkpoint has one head per kind it lists in
/// [`Architecture::heads`], the first being the one `Want::Logits` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadKind {
    SequenceClasses,
    TokenClasses,
    Span,
    MaskedLm,
    NextSentence,
}

impl Architecture {
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Base => "base model",
            Architecture::SequenceClassification => "ForSequenceClassification",
            Architecture::TokenClassification => "ForTokenClassification",
            Architecture::QuestionAnswering => "ForQuestionAnswering",
            Architecture::MaskedLm => "ForMaskedLM",
            Architecture::NextSentencePrediction => "ForNextSentencePrediction",
            Architecture::PreTraining => "ForPreTraining",
        }
    }

    /// The heads a checkpoint of this architecture carries, in the plan's order.
    pub fn heads(self) -> &'static [HeadKind] {
        match self {
            Architecture::Base => &[],
            Architecture::SequenceClassification => &[HeadKind::SequenceClasses],
            Architecture::TokenClassification => &[HeadKind::TokenClasses],
            Architecture::QuestionAnswering => &[HeadKind::Span],
            Architecture::MaskedLm => &[HeadKind::MaskedLm],
            Architecture::NextSentencePrediction => &[HeadKind::NextSentence],
            Architecture::PreTraining => &[HeadKind::MaskedLm, HeadKind::NextSentence],
        }
    }
}

/// Rotary positions as a config sets them (see [`super::family::Rotary`]).
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

fn architecture_name(t: ModelType, a: Architecture) -> String {
    let class = t.family().class;
    match a {
        Architecture::Base => format!("{class}Model"),
        a => format!("{class}{}", a.name()),
    }
}

fn parse_architecture(v: Option<&Value>) -> Result<Architecture> {
    let Some(name) = v
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
    else {
        return Ok(Architecture::Base);
    };
    let suffixes = [
        (
            "ForSequenceClassification",
            Architecture::SequenceClassification,
        ),
        ("ForTokenClassification", Architecture::TokenClassification),
        ("ForQuestionAnswering", Architecture::QuestionAnswering),
        ("ForMaskedLM", Architecture::MaskedLm),
        (
            "ForNextSentencePrediction",
            Architecture::NextSentencePrediction,
        ),
        ("ForPreTraining", Architecture::PreTraining),
        ("Model", Architecture::Base),
    ];
    suffixes
        .iter()
        .find(|(s, _)| name.ends_with(s))
        .map(|(_, a)| *a)
        .ok_or_else(|| Error::UnsupportedArchitecture(name.to_string()))
}

/// DeBERTa-v2's relative attention keys; `None` where `relative_attention` is off. What is
/// not built (the convolution of v2-xlarge, DeBERTa-v1's `p2p`) is refused by name.
fn disentangled(
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

/// The K/V heads (`num_key_value_heads`, else one per query head), which must divide the
/// query heads; grouped heads only where Q, K and V are modules of their own (their rows are
/// repeated at load). A `head_dim` other than `hidden_size / num_attention_heads` is refused.
fn kv_heads(
    file: &str,
    fam: &family::Family,
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

/// The rotary settings of a config, and the window of each layer where some attend locally.
/// Bases come from transformers 5's `rope_parameters` (flat, or per layer type), else the
/// family's keys; scaling other than `linear` and GTE's fixed `ntk` is refused by name.
fn rotary(
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

/// A switch that changes what a model computes: true, or a number other than 0.
fn switched_on(v: &Value) -> bool {
    v.as_bool() == Some(true) || v.as_f64().is_some_and(|x| x != 0.0)
}

/// NomicBERT's remote code: `rotary_scaling_factor` (null or 0: none) past
/// `max_trained_positions`, up to `n_positions`.
fn dynamic_by_keys(
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

fn positive_factor(file: &str, p: &Value, kind: &str) -> Result<f64> {
    (p.get("factor").and_then(Value::as_f64))
        .filter(|f| *f > 0.0)
        .ok_or_else(|| {
            Error::config(
                file,
                format!("rope_type `{kind}` needs a positive `factor`"),
            )
        })
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
