//! Which task runs on which model: the one table the web calls, the CLI and the JS package
//! read (the package through the loaded model's `info`).

use crate::model::{Architecture, HeadKind};

/// A task by its Hugging Face pipeline name, and the head it needs (`None`: any encoder).
pub struct TaskSpec {
    pub name: &'static str,
    pub head: Option<HeadKind>,
}

pub const TASKS: &[TaskSpec] = &[
    TaskSpec {
        name: "feature-extraction",
        head: None,
    },
    TaskSpec {
        name: "zero-shot-classification",
        head: None,
    },
    TaskSpec {
        name: "text-classification",
        head: Some(HeadKind::SequenceClasses),
    },
    TaskSpec {
        name: "token-classification",
        head: Some(HeadKind::TokenClasses),
    },
    TaskSpec {
        name: "question-answering",
        head: Some(HeadKind::Span),
    },
    TaskSpec {
        name: "fill-mask",
        head: Some(HeadKind::MaskedLm),
    },
    TaskSpec {
        name: "text-scoring",
        head: Some(HeadKind::MaskedLm),
    },
    TaskSpec {
        name: "next-sentence-prediction",
        head: Some(HeadKind::NextSentence),
    },
];

/// The task a model's (first) head is for (`feature-extraction` for a bare encoder).
pub fn head_task(arch: Architecture) -> &'static str {
    let first = arch.heads().first().copied();
    (TASKS.iter())
        .find(|t| t.head.is_some() && t.head == first)
        .map_or("feature-extraction", |t| t.name)
}

/// Every task a model of `arch` runs: those of any encoder, and its heads'.
pub fn tasks_for(arch: Architecture) -> Vec<&'static str> {
    (TASKS.iter())
        .filter(|t| t.head.is_none_or(|h| arch.heads().contains(&h)))
        .map(|t| t.name)
        .collect()
}

pub fn names() -> Vec<&'static str> {
    TASKS.iter().map(|t| t.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_head_has_one_task_and_bare_encoders_only_the_shared_ones() {
        assert_eq!(
            tasks_for(Architecture::Base),
            ["feature-extraction", "zero-shot-classification"]
        );
        assert_eq!(
            tasks_for(Architecture::TokenClassification),
            [
                "feature-extraction",
                "zero-shot-classification",
                "token-classification"
            ]
        );
        assert_eq!(head_task(Architecture::MaskedLm), "fill-mask");
        assert_eq!(
            tasks_for(Architecture::PreTraining)[2..],
            ["fill-mask", "text-scoring", "next-sentence-prediction"]
        );
        assert_eq!(
            head_task(Architecture::NextSentencePrediction),
            "next-sentence-prediction"
        );
        assert_eq!(head_task(Architecture::Base), "feature-extraction");
    }
}
