//! An entity found in a text, as the token-classification pipeline reports it (HF's field
//! names): shared by the model's tagging (`ner`), the pattern layer and redaction.

use serde::Serialize;

/// One token (`entity`, `index`) or one aggregated entity (`entity_group`), HF field names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entity {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity_group: Option<String>,
    pub score: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    pub word: String,
    pub start: usize,
    pub end: usize,
    /// Which layer found it; set only when the pattern layer ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Model,
    Pattern,
}

impl Entity {
    pub fn label(&self) -> &str {
        self.entity
            .as_deref()
            .or(self.entity_group.as_deref())
            .unwrap_or_default()
    }
}
