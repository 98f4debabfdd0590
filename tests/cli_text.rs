//! What the CLI prints besides its answers: help texts a user reads (no rustdoc markup), and
//! stderr free of the system's noise on a machine without a display session.

use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Runs the CLI without `XDG_RUNTIME_DIR` and `WAYLAND_DISPLAY` (a server, a container, CI):
/// (exit ok, stdout, stderr).
fn webert(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_webert"))
        .current_dir(ROOT)
        .args(args)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    let s = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.success(), s(out.stdout), s(out.stderr))
}

/// The subcommands `webert --help` lists.
fn subcommands() -> Vec<String> {
    let (ok, help, _) = webert(&["--help"]);
    assert!(ok);
    let (_, listed) = help.split_once("Commands:\n").unwrap();
    let listed = listed.split("\n\n").next().unwrap();
    let names: Vec<String> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|n| n != "help")
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    names
}

#[test]
fn help_texts_carry_no_rustdoc_links() {
    for name in subcommands() {
        let (ok, help, _) = webert(&[&name, "--help"]);
        assert!(ok, "{name} --help");
        // Doc comments become help text: an intra-doc link reads as ``[`Type::item`]`` there.
        let marked: Vec<&str> = help.lines().filter(|l| l.contains("[`")).collect();
        assert!(
            marked.is_empty(),
            "webert {name} --help: rustdoc markup in {marked:?}"
        );
    }
}

#[test]
fn a_run_without_a_display_session_prints_no_xdg_warning() {
    // The default backend lists GPU adapters, which loads the Vulkan driver and, with it,
    // libwayland's "XDG_RUNTIME_DIR is invalid or not set".
    let (ok, out, err) = webert(&[
        "ner",
        "--model",
        "models/pii",
        "--text",
        "My name is John Smith.",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("GIVEN_NAME"), "{out}");
    assert!(!err.contains("XDG_RUNTIME_DIR"), "{err}");
}
