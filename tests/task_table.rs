//! The package's task table (`www/pkg-src/tasks.js`) is written from `tasks::registry`, the
//! one table of tasks, and its list of a model folder's files (`layout.js`) from
//! `model::files`, so that a page can start downloading before the WebAssembly module is up:
//! this fails when they disagree. To write both again: `WEBERT_BLESS=1 cargo test --test
//! task_table`.

use std::path::Path;
use webert::tasks::registry::{head_name, TaskSpec, TASKS};

fn generated() -> String {
    let mut out = String::from(
        "// Generated from src/tasks/registry.rs by `WEBERT_BLESS=1 cargo test --test task_table`;\n\
         // do not edit.\n\n\
         /**\n * The tasks `pipeline()` makes: the head each needs (null: any encoder), the options of\n\
         \x20* its call, and the engine's defaults of those it has one for.\n\
         \x20*/\n\
         export const TASKS = {\n",
    );
    for t in TASKS.iter().filter(|t| t.pipeline) {
        let head = t
            .head
            .map_or("null".to_string(), |h| format!("'{}'", head_name(h)));
        out += &format!("  '{}': {{ head: {head}, {} }},\n", t.name, options(t));
    }
    out += "};\n\n/** Other names of those tasks. */\nexport const ALIASES = {\n";
    for t in TASKS.iter().filter(|t| t.pipeline) {
        for a in t.aliases {
            out += &format!("  '{a}': '{}',\n", t.name);
        }
    }
    out += "};\n\n/** Calls that run on another task's pipeline, not pipelines of their own. */\nexport const CALLS = [";
    let calls: Vec<String> = (TASKS.iter().filter(|t| !t.pipeline))
        .map(|t| format!("'{}'", t.name))
        .collect();
    out += &calls.join(", ");
    out += "];\n";
    out
}

fn options(t: &TaskSpec) -> String {
    let names: Vec<String> = t.options.iter().map(|o| format!("'{}'", o.name)).collect();
    let defaults: Vec<String> = (t.options.iter())
        .filter_map(|o| Some(format!("{}: {}", o.name, o.default?)))
        .collect();
    let defaults = match defaults.is_empty() {
        true => "{}".to_string(),
        false => format!("{{ {} }}", defaults.join(", ")),
    };
    format!("options: [{}], defaults: {defaults}", names.join(", "))
}

/// Fails when the package's generated `file` is not `want` (written from `source`); writes
/// it under `WEBERT_BLESS`.
fn check_generated(file: &str, want: String, source: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    if std::env::var_os("WEBERT_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let got = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        got == want,
        "{} differs from {source}; write it again with \
         `WEBERT_BLESS=1 cargo test --test task_table`. Expected:\n{want}",
        path.display()
    );
}

#[test]
fn the_package_task_table_is_the_registry() {
    check_generated("www/pkg-src/tasks.js", generated(), "src/tasks/registry.rs");
}

#[test]
fn names_and_aliases_are_unique() {
    let mut seen = std::collections::BTreeSet::new();
    for t in TASKS {
        for name in std::iter::once(&t.name).chain(t.aliases) {
            assert!(seen.insert(*name), "{name} names two tasks");
        }
    }
}

/// A default of the table, read as the engine reads that option.
fn default_of<T: serde::de::DeserializeOwned>(task: &str, option: &str) -> T {
    let spec = TASKS.iter().find(|t| t.name == task).unwrap();
    let default = (spec.options.iter().find(|o| o.name == option))
        .and_then(|o| o.default)
        .unwrap_or_else(|| panic!("{task}: no default for {option}"));
    serde_json::from_str(default).unwrap_or_else(|e| panic!("{task} {option}: {e}"))
}

#[test]
fn the_table_defaults_are_the_engines() {
    use webert::tasks::ner::{Aggregation, NerOptions};
    use webert::tasks::{embed::Pooling, qa::QaOptions, zero_shot::ZeroShotOptions};
    let qa = QaOptions::default();
    let of = |option| default_of::<serde_json::Value>("question-answering", option);
    assert_eq!(of("top_k"), qa.top_k);
    assert_eq!(of("max_question_len"), qa.max_question_len);
    assert_eq!(of("max_answer_len"), qa.max_answer_len);
    assert_eq!(of("handle_impossible_answer"), qa.handle_impossible_answer);
    assert_eq!(of("align_to_words"), qa.align_to_words);

    let ner = NerOptions::default();
    let task = "token-classification";
    let aggregation: Aggregation = default_of(task, "aggregation_strategy");
    assert_eq!(aggregation, ner.aggregation);
    assert_eq!(default_of::<usize>(task, "stride"), ner.stride);
    assert_eq!(
        default_of::<Vec<String>>(task, "ignore_labels"),
        ner.ignore_labels
    );

    let zero_shot = ZeroShotOptions::default();
    let task = "zero-shot-classification";
    let template: String = default_of(task, "hypothesis_template");
    assert_eq!(template, zero_shot.hypothesis_template);
    assert_eq!(
        default_of::<bool>(task, "multi_label"),
        zero_shot.multi_label
    );

    let top_k: usize = default_of("fill-mask", "top_k");
    assert_eq!(top_k, webert::tasks::fill_mask::DEFAULT_TOP_K);
    assert_eq!(default_of::<Pooling>("rank", "pooling"), Pooling::default());
    assert_eq!(
        default_of::<Pooling>("feature-extraction", "pooling"),
        Pooling::default()
    );
}

fn generated_layout() -> String {
    format!(
        "// Generated from src/model/files.rs by `WEBERT_BLESS=1 cargo test --test task_table`;\n\
         // do not edit.\n\n\
         /**\n * The files of a model folder the engine reads (`modelFiles()` of the module): `required`,\n\
         \x20* `text` (read when present), `weights` in the engine's order of preference, `dtypes`\n\
         \x20* (`{{ dtype: file }}`).\n\
         \x20*/\n\
         export const LAYOUT = {};\n",
        webert::model::files::layout_json()
    )
}

#[test]
fn the_package_file_layout_is_the_engines() {
    check_generated(
        "www/pkg-src/layout.js",
        generated_layout(),
        "src/model/files.rs",
    );
}
