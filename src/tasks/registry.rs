//! Which task runs on which model: the one table of tasks. `web/calls.rs` dispatches through
//! it, `info` lists a model's tasks from it, and the package's `tasks.js` is written from it
//! (`tests/task_table.rs`).

use crate::model::{Architecture, HeadKind};

/// What a call runs: `web/calls.rs` matches on it, so a task added here without its handler
/// does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Classify,
    Tokens,
    Answer,
    Embed,
    /// Documents ranked by similarity to a query: a feature-extraction pipeline's `rank()`.
    Rank,
    FillMask,
    Score,
    NextSentence,
    ZeroShot,
}

/// A task by its Hugging Face pipeline name, the other names it goes by, and the head it needs
/// (`None`: any encoder).
pub struct TaskSpec {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub head: Option<HeadKind>,
    pub call: Call,
    /// Whether `pipeline(name)` makes it; otherwise it is a call on another task's pipeline.
    pub pipeline: bool,
}

const fn task(name: &'static str, head: Option<HeadKind>, call: Call) -> TaskSpec {
    TaskSpec {
        name,
        aliases: &[],
        head,
        call,
        pipeline: true,
    }
}

pub const TASKS: &[TaskSpec] = &[
    TaskSpec {
        aliases: &["embeddings"],
        ..task("feature-extraction", None, Call::Embed)
    },
    task("zero-shot-classification", None, Call::ZeroShot),
    TaskSpec {
        aliases: &["sentiment-analysis"],
        ..task(
            "text-classification",
            Some(HeadKind::SequenceClasses),
            Call::Classify,
        )
    },
    TaskSpec {
        aliases: &["ner"],
        ..task(
            "token-classification",
            Some(HeadKind::TokenClasses),
            Call::Tokens,
        )
    },
    task("question-answering", Some(HeadKind::Span), Call::Answer),
    task("fill-mask", Some(HeadKind::MaskedLm), Call::FillMask),
    task("text-scoring", Some(HeadKind::MaskedLm), Call::Score),
    task(
        "next-sentence-prediction",
        Some(HeadKind::NextSentence),
        Call::NextSentence,
    ),
    TaskSpec {
        pipeline: false,
        ..task("rank", None, Call::Rank)
    },
];

/// The task of a name or alias.
pub fn find(name: &str) -> Option<&'static TaskSpec> {
    (TASKS.iter()).find(|t| t.name == name || t.aliases.contains(&name))
}

/// The head's name in the package's task table (`tasks.js`).
pub fn head_name(head: HeadKind) -> &'static str {
    match head {
        HeadKind::SequenceClasses => "sequence-classification",
        HeadKind::TokenClasses => "token-classification",
        HeadKind::Span => "question-answering",
        HeadKind::MaskedLm => "masked-lm",
        HeadKind::NextSentence => "next-sentence-prediction",
    }
}

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
        .filter(|t| t.pipeline && t.head.is_none_or(|h| arch.heads().contains(&h)))
        .map(|t| t.name)
        .collect()
}

/// The pipelines' task names.
pub fn names() -> Vec<&'static str> {
    (TASKS.iter().filter(|t| t.pipeline))
        .map(|t| t.name)
        .collect()
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
