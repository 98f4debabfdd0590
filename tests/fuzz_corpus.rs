//! Replays every committed fuzz input (`tests/fuzz/corpus/TARGET/*`, the minimized corpus, and
//! `tests/fuzz/regressions/TARGET/*`, inputs that once crashed a target) through the targets'
//! entry points in `webert::fuzz`: each must return, never panic (in wasm a panic kills the
//! module). Runs on stable; the fuzzing itself is `scripts/fuzz.sh` (nightly cargo-fuzz).

use std::path::Path;

fn inputs(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = (entries.flatten())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_committed_fuzz_input_returns_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz");
    let mut failures = Vec::new();
    for target in webert::fuzz::TARGETS {
        let corpus = inputs(&root.join("corpus").join(target));
        let regressions = inputs(&root.join("regressions").join(target));
        assert!(
            corpus.len() >= 3,
            "{target}: only {} committed corpus inputs (scripts/fuzz.sh makes them)",
            corpus.len()
        );
        for file in corpus.iter().chain(&regressions) {
            let data = std::fs::read(file).unwrap();
            let ran = std::panic::catch_unwind(|| webert::fuzz::run(target, &data));
            match ran {
                Ok(known) => assert!(known, "no fuzz target named {target}"),
                Err(_) => failures.push(file.display().to_string()),
            }
        }
    }
    assert!(failures.is_empty(), "panicked on: {failures:#?}");
}

#[test]
fn every_fuzz_target_has_its_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for target in webert::fuzz::TARGETS {
        let src = std::fs::read_to_string(root.join(format!("fuzz_targets/{target}.rs"))).unwrap();
        assert!(
            src.contains(&format!("webert::fuzz::{target}(data)")),
            "{target}"
        );
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "{target}"
        );
    }
    assert!(!webert::fuzz::run("no-such-target", b""));
}
