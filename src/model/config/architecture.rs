//! The task class a checkpoint is (`architectures` in `config.json`) and the heads it carries.

use crate::error::{Error, Result};
use crate::model::family::ModelType;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

pub(super) fn architecture_name(t: ModelType, a: Architecture) -> String {
    let class = t.family().class;
    match a {
        Architecture::Base => format!("{class}Model"),
        a => format!("{class}{}", a.name()),
    }
}

pub(super) fn parse_architecture(v: Option<&Value>) -> Result<Architecture> {
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
