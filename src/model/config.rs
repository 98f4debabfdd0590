//! The Hugging Face `config.json`, normalised across BERT-family model types.

use crate::error::{Error, Result};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelType {
    Bert,
    DistilBert,
    Roberta,
    XlmRoberta,
    Electra,
}

impl ModelType {
    /// The `model_type` of `config.json` (RoBERTa's own for CamemBERT).
    pub fn name(self) -> &'static str {
        match self {
            ModelType::Bert => "bert",
            ModelType::DistilBert => "distilbert",
            ModelType::Roberta => "roberta",
            ModelType::XlmRoberta => "xlm-roberta",
            ModelType::Electra => "electra",
        }
    }

    /// The state-dict prefix the base model carries inside task checkpoints.
    pub fn prefix(self) -> &'static str {
        match self {
            ModelType::Bert => "bert",
            ModelType::DistilBert => "distilbert",
            ModelType::Roberta | ModelType::XlmRoberta => "roberta",
            ModelType::Electra => "electra",
        }
    }
}

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    None,
    /// Exact GELU with erf.
    Gelu,
    /// GELU with the tanh approximation (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    Relu,
    Tanh,
}

impl Activation {
    fn parse(file: &str, name: &str) -> Result<Self> {
        match name {
            "gelu" | "gelu_python" => Ok(Activation::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Ok(Activation::GeluTanh),
            "relu" => Ok(Activation::Relu),
            "tanh" => Ok(Activation::Tanh),
            other => Err(Error::config(
                file,
                format!("unsupported hidden_act `{other}`; supported: gelu, gelu_new, gelu_pytorch_tanh, relu"),
            )),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub model_type: ModelType,
    pub architecture: Architecture,
    pub vocab_size: usize,
    pub hidden_size: usize,
    /// ELECTRA's embeddings can be narrower than the encoder (projected up).
    pub embedding_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: Activation,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f32,
    pub pad_token_id: Option<u32>,
    /// RoBERTa-style position ids start after the padding index.
    pub position_offset: usize,
    pub id2label: Vec<String>,
    pub multi_label: bool,
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
        let model_type = match mt {
            "bert" => ModelType::Bert,
            "distilbert" => ModelType::DistilBert,
            "roberta" | "camembert" => ModelType::Roberta,
            "xlm-roberta" => ModelType::XlmRoberta,
            "electra" => ModelType::Electra,
            other => return Err(Error::UnsupportedModelType(other.to_string())),
        };
        let architecture = parse_architecture(obj.get("architectures"))?;
        let bert_only = matches!(
            architecture,
            Architecture::NextSentencePrediction | Architecture::PreTraining
        );
        if bert_only && model_type != ModelType::Bert {
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
        let distil = model_type == ModelType::DistilBert;
        let hidden_size = need(&["hidden_size", "dim"])?;
        let act_name = obj
            .get(if distil { "activation" } else { "hidden_act" })
            .and_then(Value::as_str)
            .unwrap_or("gelu");
        let pad_token_id = get(&["pad_token_id"]).and_then(|x| u32::try_from(x).ok());
        let is_roberta = matches!(model_type, ModelType::Roberta | ModelType::XlmRoberta);
        let position_offset = if is_roberta {
            (pad_token_id.unwrap_or(1) as usize).saturating_add(1)
        } else {
            0
        };
        if obj
            .get("position_embedding_type")
            .and_then(Value::as_str)
            .is_some_and(|p| p != "absolute")
        {
            return Err(Error::config(
                file,
                "only position_embedding_type `absolute` is supported",
            ));
        }
        let cfg = ModelConfig {
            model_type,
            architecture,
            vocab_size: need(&["vocab_size"])?,
            hidden_size,
            embedding_size: match get(&["embedding_size"]) {
                Some(_) => need(&["embedding_size"])?,
                None => hidden_size,
            },
            num_layers: need(&["num_hidden_layers", "n_layers"])?,
            num_heads: need(&["num_attention_heads", "n_heads"])?,
            intermediate_size: need(&["intermediate_size", "hidden_dim"])?,
            hidden_act: Activation::parse(file, act_name)?,
            max_position_embeddings: need(&["max_position_embeddings"])?,
            type_vocab_size: if distil {
                0
            } else {
                match get(&["type_vocab_size"]) {
                    Some(_) => need(&["type_vocab_size"])?,
                    None => 2,
                }
            },
            layer_norm_eps: obj
                .get("layer_norm_eps")
                .and_then(Value::as_f64)
                .unwrap_or(1e-12) as f32,
            pad_token_id,
            position_offset,
            id2label: parse_labels(file, obj.get("id2label"))?,
            multi_label: obj.get("problem_type").and_then(Value::as_str)
                == Some("multi_label_classification"),
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
        let tables = v
            .checked_add(n(self.max_position_embeddings)?)?
            .checked_add(n(self.type_vocab_size)?)?
            .checked_mul(e)?;
        let project = if e != h { e.checked_mul(h)? + h } else { 0 };
        let hh = h.checked_mul(h)?;
        let layer = (hh.checked_mul(4)?)
            .checked_add(h.checked_mul(i)?.checked_mul(2)?)?
            .checked_add(i + 9 * h)?;
        let layers = layer.checked_mul(n(self.num_layers)?)?;
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
    let class = match t {
        ModelType::Bert => "Bert",
        ModelType::DistilBert => "DistilBert",
        ModelType::Roberta => "Roberta",
        ModelType::XlmRoberta => "XLMRoberta",
        ModelType::Electra => "Electra",
    };
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
