//! Which task runs on which model: the one table of tasks. `web/calls.rs` dispatches through
//! it, `info` lists a model's tasks from it, and the package's `tasks.js` is written from it
//! (`tests/task_table.rs`).

use crate::engine::{Engine, Want};
use crate::error::Result;
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

/// A task by its Hugging Face pipeline name, the other names it goes by, the head it needs
/// (`None`: any encoder), the options its call takes and the CLI subcommand that runs it.
pub struct TaskSpec {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub head: Option<HeadKind>,
    pub call: Call,
    /// Whether `pipeline(name)` makes it; otherwise it is a call on another task's pipeline.
    pub pipeline: bool,
    /// The options of a call besides its inputs (texts, question, labels, …).
    pub options: &'static [TaskOption],
    /// The `webert` subcommand that runs it (`rank`: `embed --query`; zero-shot: `classify
    /// --labels`).
    pub cli: &'static str,
}

/// An option of a task's call, with the default the engine gives it when it is left out (JSON
/// text), where the engine has one.
pub struct TaskOption {
    pub name: &'static str,
    pub default: Option<&'static str>,
}

const fn opt(name: &'static str) -> TaskOption {
    TaskOption {
        name,
        default: None,
    }
}

const fn or(name: &'static str, default: &'static str) -> TaskOption {
    TaskOption {
        name,
        default: Some(default),
    }
}

const fn task(
    name: &'static str,
    head: Option<HeadKind>,
    call: Call,
    cli: &'static str,
) -> TaskSpec {
    TaskSpec {
        name,
        aliases: &[],
        head,
        call,
        pipeline: true,
        options: &[],
        cli,
    }
}

pub const TASKS: &[TaskSpec] = &[
    TaskSpec {
        aliases: &["embeddings"],
        options: &[
            or("pooling", r#""mean""#),
            or("normalize", "false"),
            opt("truncation"),
        ],
        ..task("feature-extraction", None, Call::Embed, "embed")
    },
    TaskSpec {
        options: &[
            or("hypothesis_template", r#""This example is {}.""#),
            or("multi_label", "false"),
            opt("truncation"),
        ],
        ..task("zero-shot-classification", None, Call::ZeroShot, "classify")
    },
    TaskSpec {
        aliases: &["sentiment-analysis"],
        // `top_k` left out: every label.
        options: &[opt("top_k"), opt("function_to_apply"), opt("truncation")],
        ..task(
            "text-classification",
            Some(HeadKind::SequenceClasses),
            Call::Classify,
            "classify",
        )
    },
    TaskSpec {
        aliases: &["ner"],
        options: &[
            or("aggregation_strategy", r#""none""#),
            or("stride", "16"),
            opt("max_length"),
            or("ignore_labels", r#"["O"]"#),
            opt("patterns"),
            opt("custom_patterns"),
        ],
        ..task(
            "token-classification",
            Some(HeadKind::TokenClasses),
            Call::Tokens,
            "ner",
        )
    },
    TaskSpec {
        options: &[
            or("top_k", "1"),
            opt("max_seq_len"),
            opt("doc_stride"),
            or("max_question_len", "64"),
            or("max_answer_len", "15"),
            or("handle_impossible_answer", "false"),
            or("align_to_words", "true"),
        ],
        ..task(
            "question-answering",
            Some(HeadKind::Span),
            Call::Answer,
            "qa",
        )
    },
    TaskSpec {
        options: &[or("top_k", "5"), opt("truncation")],
        ..task(
            "fill-mask",
            Some(HeadKind::MaskedLm),
            Call::FillMask,
            "fill-mask",
        )
    },
    TaskSpec {
        options: &[opt("max_length")],
        ..task(
            "text-scoring",
            Some(HeadKind::MaskedLm),
            Call::Score,
            "score",
        )
    },
    TaskSpec {
        options: &[opt("truncation")],
        ..task(
            "next-sentence-prediction",
            Some(HeadKind::NextSentence),
            Call::NextSentence,
            "next-sentence",
        )
    },
    TaskSpec {
        pipeline: false,
        options: &[or("pooling", r#""mean""#), opt("truncation")],
        ..task("rank", None, Call::Rank, "embed")
    },
];

/// The task of a name or alias.
pub fn find(name: &str) -> Option<&'static TaskSpec> {
    (TASKS.iter()).find(|t| t.name == name || t.aliases.contains(&name))
}

/// The default of a task's option as a command-line value (a JSON string without its quotes).
/// Panics where the table gives that option no default: the caller names a row that is there.
pub fn default_arg(task: &str, option: &str) -> &'static str {
    let spec = find(task).unwrap_or_else(|| panic!("no task {task} in TASKS"));
    let default = (spec.options.iter().find(|o| o.name == option))
        .and_then(|o| o.default)
        .unwrap_or_else(|| panic!("{task} has no default for {option} in TASKS"));
    default
        .strip_prefix('"')
        .and_then(|d| d.strip_suffix('"'))
        .unwrap_or(default)
}

/// What `engine` runs for `call`: the output of the head the table gives it (an error naming
/// that head when the model lacks it). Every task asks for its head here, so the table is the
/// one place a task's head is stated.
pub fn want_head(engine: &Engine, call: Call) -> Result<Want> {
    let spec = (TASKS.iter().find(|t| t.call == call)).expect("every call has a row in TASKS");
    let head =
        (spec.head).unwrap_or_else(|| panic!("{} runs on any encoder: it has no head", spec.name));
    // The error's words: "the model has no masked-LM head".
    let words = match head {
        HeadKind::MaskedLm => "masked-LM",
        other => head_name(other),
    };
    engine.want_head(head, words)
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
