//! Which task runs on which model: the one table the web calls, the CLI and the JS package
//! read (the package through the loaded model's `info`).

use crate::model::Architecture;

/// A task by its Hugging Face pipeline name, and the head it needs (`None`: any encoder).
pub struct TaskSpec {
    pub name: &'static str,
    pub head: Option<Architecture>,
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
        head: Some(Architecture::SequenceClassification),
    },
    TaskSpec {
        name: "token-classification",
        head: Some(Architecture::TokenClassification),
    },
    TaskSpec {
        name: "question-answering",
        head: Some(Architecture::QuestionAnswering),
    },
    TaskSpec {
        name: "fill-mask",
        head: Some(Architecture::MaskedLm),
    },
];

/// The task a model's head is for (`feature-extraction` for a bare encoder).
pub fn head_task(arch: Architecture) -> &'static str {
    (TASKS.iter())
        .find(|t| t.head == Some(arch))
        .map_or("feature-extraction", |t| t.name)
}

/// Every task a model of `arch` runs: those of any encoder, and its head's.
pub fn tasks_for(arch: Architecture) -> Vec<&'static str> {
    (TASKS.iter())
        .filter(|t| t.head.is_none_or(|h| h == arch))
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
        assert_eq!(head_task(Architecture::Base), "feature-extraction");
    }
}
