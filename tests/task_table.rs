//! The package's task table (`www/pkg-src/tasks.js`) is written from `tasks::registry`, the
//! one table of tasks: this fails when the two disagree. To write the file again after
//! changing the registry: `WEBERT_BLESS=1 cargo test --test task_table`.

use std::path::Path;
use webert::tasks::registry::{head_name, TASKS};

fn generated() -> String {
    let mut out = String::from(
        "// Generated from src/tasks/registry.rs by `WEBERT_BLESS=1 cargo test --test task_table`;\n\
         // do not edit.\n\n\
         /** The tasks `pipeline()` makes, each with the head it needs (null: any encoder). */\n\
         export const TASKS = {\n",
    );
    for t in TASKS.iter().filter(|t| t.pipeline) {
        let head = t
            .head
            .map_or("null".to_string(), |h| format!("'{}'", head_name(h)));
        out += &format!("  '{}': {{ head: {head} }},\n", t.name);
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

#[test]
fn the_package_task_table_is_the_registry() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("www/pkg-src/tasks.js");
    let want = generated();
    if std::env::var_os("WEBERT_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let got = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        got == want,
        "{} differs from src/tasks/registry.rs; write it again with \
         `WEBERT_BLESS=1 cargo test --test task_table`. Expected:\n{want}",
        path.display()
    );
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
