//! The CLI with model ids: `--model ORG/NAME` fetched from a local mock of the Hugging Face Hub
//! (tests/mock-hub.mjs, run with node: the Hub's URL layout, 302 redirects of weight files to a
//! "CDN" path, faults on demand) into a cache folder, `--dtype`, `--offline`, and clear errors
//! that leave nothing half-written in the cache. No test reaches the internet.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TINY: &str = "tests/tiny/distilbert-seqcls";

struct Hub {
    url: String,
    child: Child,
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Hub {
    /// The mock hub serving `repos` (`(id, folder, faults)`, faults as JSON).
    fn start(repos: &[(&str, &str, &str)]) -> Hub {
        let repos: serde_json::Map<String, serde_json::Value> = (repos.iter())
            .map(|(id, dir, faults)| {
                let faults: serde_json::Value = serde_json::from_str(faults).unwrap();
                let dir = Path::new(ROOT).join(dir);
                (
                    id.to_string(),
                    serde_json::json!({ "dir": dir, "faults": faults }),
                )
            })
            .collect();
        let config = serde_json::json!({ "repos": repos }).to_string();
        let mut child = Command::new("node")
            .arg(Path::new(ROOT).join("tests/mock-hub.mjs"))
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node (the mock hub runs on Node.js)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).expect("the mock hub's URL");
        Hub {
            url: v["url"].as_str().unwrap().to_string(),
            child,
        }
    }

    /// Paths requested so far that end with `file`.
    fn requests(&self, file: &str) -> Vec<String> {
        let out = Command::new("node")
            .arg("-e")
            .arg(format!(
                "fetch('{}/__log').then(r => r.text()).then(t => process.stdout.write(t))",
                self.url
            ))
            .output()
            .unwrap();
        let log: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        (log.iter())
            .filter(|l| l["method"] == "GET")
            .map(|l| l["path"].as_str().unwrap().to_string())
            .filter(|p| p.ends_with(&format!("/{file}")))
            .collect()
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("webert-hub-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs the CLI: (exit ok, stdout, stderr).
fn webert(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_webert"));
    cmd.current_dir(ROOT).args(args).args(["--backend", "cpu"]);
    cmd.env_remove("WEBERT_REMOTE_HOST");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let s = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.success(), s(out.stdout), s(out.stderr))
}

/// Every file under `dir`, relative paths.
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn an_id_is_fetched_through_redirects_cached_and_read_offline() {
    let hub = Hub::start(&[("test/tiny-seqcls", TINY, "{}")]);
    let cache = scratch("ok");
    let cache_s = cache.to_str().unwrap();
    let text = ["--text", "the cat sat on the mat", "--top-k", "3"];
    let (ok, local, err) = webert(&[&["classify", "--model", TINY], &text[..]].concat(), &[]);
    assert!(ok, "{err}");

    let by_id = [
        &[
            "classify",
            "--model",
            "test/tiny-seqcls",
            "--cache-dir",
            cache_s,
        ][..],
        &text[..],
    ]
    .concat();
    let (ok, out, err) = webert(&by_id, &[("WEBERT_REMOTE_HOST", &hub.url)]);
    assert!(ok, "{err}");
    assert_eq!(out, local, "the id gives what the folder gives");
    // The weights came from the "CDN" after the Hub's redirect; nothing else was downloaded.
    let st = hub.requests("model.safetensors");
    assert_eq!(st.len(), 2, "{st:?}");
    assert!(
        st[0].contains("/resolve/main/") && st[1].starts_with("/cdn/"),
        "{st:?}"
    );
    assert!(hub.requests("model.onnx").is_empty());
    let files = listing(&cache);
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("test/tiny-seqcls/main/model.safetensors")),
        "{files:?}"
    );
    assert!(!files.iter().any(|f| f.contains(".part")), "{files:?}");

    // Again: from the cache, with no request at all, and so offline too.
    let before = hub.requests("config.json").len();
    let (ok, again, err) = webert(&by_id, &[("WEBERT_REMOTE_HOST", &hub.url)]);
    assert!(ok && again == local, "{err}");
    assert_eq!(hub.requests("config.json").len(), before);

    // A dtype the model lacks: the ones it has are named.
    let (ok, _, err) = webert(
        &[&by_id[..], &["--dtype", "q4", "--remote-host", &hub.url]].concat(),
        &[],
    );
    assert!(!ok);
    assert!(
        err.contains("model test/tiny-seqcls on http://127.0.0.1")
            && err.contains("has no q4 weights (onnx/model_q4.onnx); it has: fp32 (safetensors)"),
        "{err}"
    );
    // Offline, with the host gone: from the cache.
    let url = hub.url.clone();
    drop(hub);
    let offline = [&by_id[..], &["--offline"]].concat();
    let (ok, again, err) = webert(&offline, &[("WEBERT_REMOTE_HOST", &url)]);
    assert!(ok && again == local, "{err}");
    // Offline without the files: say so.
    let other = [
        "classify",
        "--model",
        "test/other",
        "--cache-dir",
        cache_s,
        "--offline",
        "--text",
        "x",
    ];
    let (ok, _, err) = webert(&other, &[]);
    assert!(
        !ok && err.contains("not in the cache") && err.contains("without --offline"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn dtype_fetches_only_its_weights_file() {
    let hub = Hub::start(&[("org/pii", "models/pii", "{}")]);
    let cache = scratch("dtype");
    let common = [
        "ner",
        "--aggregation",
        "first",
        "--text",
        "Call John Smith at +1 415 555 0132",
    ];
    let (ok, local, err) = webert(&[&common[..], &["--model", "models/pii"]].concat(), &[]);
    assert!(ok, "{err}");
    let id = [
        &common[..],
        &["--model", "org/pii", "--remote-host", &hub.url],
        &["--cache-dir", cache.to_str().unwrap()],
    ]
    .concat();
    let (ok, out, err) = webert(&[&id[..], &["--dtype", "q4"]].concat(), &[]);
    assert!(ok, "{err}");
    assert_eq!(out, local);
    // Only the q4 file: no probing of other weights, no safetensors.
    let weights: Vec<String> = ["model.safetensors", "model.onnx", "model_q4.onnx"]
        .iter()
        .flat_map(|f| hub.requests(f))
        .collect();
    assert_eq!(weights.len(), 2, "{weights:?}");
    assert!(weights.iter().all(|p| p.ends_with("onnx/model_q4.onnx")));

    let (ok, _, err) = webert(&[&id[..], &["--dtype", "q8"]].concat(), &[]);
    assert!(!ok);
    assert!(
        err.contains(
            "has no q8 weights (onnx/model_quantized.onnx); it has: q4 (onnx/model_q4.onnx)"
        ),
        "{err}"
    );
    // The same choice for a folder.
    let folder = [&common[..], &["--model", "models/pii", "--dtype", "fp16"]].concat();
    let (ok, _, err) = webert(&folder, &[]);
    assert!(!ok);
    assert!(
        err.contains("models/pii: has no fp16 weights (onnx/model_fp16.onnx); it has: q4"),
        "{err}"
    );
    let (ok, _, err) = webert(&[&id[..], &["--dtype", "int3"]].concat(), &[]);
    assert!(
        !ok && err.contains("unknown dtype `int3`; use one of fp32, fp16, q8"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn faults_give_clear_errors_and_leave_no_cache_entry() {
    let hub = Hub::start(&[
        ("t/truncated", TINY, r#"{"model.safetensors": "truncate"}"#),
        ("t/lying", TINY, r#"{"model.safetensors": "lying-length"}"#),
        ("t/html", TINY, r#"{"config.json": "html"}"#),
        ("t/no-tokenizer", TINY, r#"{"tokenizer.json": "missing"}"#),
        (
            "t/flaky",
            TINY,
            r#"{"tokenizer.json": {"kind": "error500", "times": 1}}"#,
        ),
    ]);
    let cache = scratch("faults");
    let run = |id: &str| {
        let args = [
            "classify",
            "--model",
            id,
            "--remote-host",
            &hub.url,
            "--cache-dir",
            cache.to_str().unwrap(),
            "--text",
            "hello",
        ];
        webert(&args, &[])
    };
    let cached = |id: &str| {
        listing(&cache)
            .into_iter()
            .filter(|f| f.contains(id))
            .collect::<Vec<_>>()
    };

    let (ok, _, err) = run("t/truncated");
    assert!(!ok);
    assert!(
        err.contains("model t/truncated on http://127.0.0.1"),
        "{err}"
    );
    assert!(
        err.contains("model.safetensors: download of") && err.contains("cut off"),
        "{err}"
    );
    assert!(err.contains("after 3 attempts"), "{err}");
    assert!(
        !cached("t/truncated")
            .iter()
            .any(|f| f.contains("safetensors")),
        "{:?}",
        cached("t/truncated")
    );

    let (ok, _, err) = run("t/lying");
    assert!(!ok && err.contains("cut off"), "{err}");
    assert!(!cached("t/lying").iter().any(|f| f.contains("safetensors")));

    let (ok, _, err) = run("t/html");
    assert!(
        !ok && err.contains("config.json") && err.contains("HTML page"),
        "{err}"
    );
    assert!(cached("t/html").is_empty(), "{:?}", cached("t/html"));

    let (ok, _, err) = run("t/no-tokenizer");
    assert!(!ok, "{err}");
    assert!(
        err.contains("model t/no-tokenizer on http://127.0.0.1"),
        "{err}"
    );
    assert!(err.contains("tokenizer.json: not found (HTTP 404"), "{err}");

    let (ok, out, err) = run("t/flaky");
    assert!(ok, "{err}");
    assert!(out.contains("score"), "{out}");
    assert!(
        err.contains("HTTP 500") && err.contains("trying again"),
        "{err}"
    );
    assert_eq!(hub.requests("t/flaky/resolve/main/tokenizer.json").len(), 2);

    let (ok, _, err) = run("nobody/nothing");
    assert!(
        !ok && err.contains("config.json: not found (HTTP 401"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

/// A sentence-transformers folder: `embed` defaults to its own pooling and normalisation
/// (`modules.json`, `1_Pooling/config.json`, `2_Normalize`), from the folder and from an id
/// (which fetches those files too), and the flags override them.
#[test]
fn sentence_transformers_settings_are_the_embed_defaults() {
    const ST: &str = "tests/tiny/mpnet-base-st";
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join(ST).join("golden.json")).unwrap(),
    )
    .unwrap();
    let input = &golden["cases"][0]["inputs"][0];
    let text = input["text"].as_str().unwrap();
    let vector = |out: &str| -> Vec<f64> { serde_json::from_str(out).unwrap() };
    let near = |got: &[f64], key: &str| {
        let want: Vec<f64> = serde_json::from_value(input[key].clone()).unwrap();
        assert_eq!(got.len(), want.len(), "{key}");
        let worst = (got.iter().zip(&want))
            .map(|(g, w)| (g - w).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-4, "{key}: max |Δ| {worst}");
    };
    let (ok, out, err) = webert(&["embed", "--model", ST, "--text", text], &[]);
    assert!(ok, "{err}");
    near(&vector(&out), "sentence_embedding");
    let (ok, plain, err) = webert(
        &["embed", "--model", ST, "--no-normalize", "--text", text],
        &[],
    );
    assert!(ok, "{err}");
    near(&vector(&plain), "mean_pooled");
    let (ok, cls, err) = webert(
        &["embed", "--model", ST, "--pooling", "cls", "--text", text],
        &[],
    );
    assert!(ok, "{err}");
    let first: Vec<f64> = serde_json::from_value(input["last_hidden_state"][0].clone()).unwrap();
    let norm = first.iter().map(|x| x * x).sum::<f64>().sqrt();
    let first: Vec<f64> = first.iter().map(|x| x / norm).collect();
    let worst = (vector(&cls).iter().zip(&first))
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-4, "cls, normalised: max |Δ| {worst}");

    let hub = Hub::start(&[("st/mpnet", ST, "{}")]);
    let cache = scratch("st");
    let by_id = [
        "embed",
        "--model",
        "st/mpnet",
        "--cache-dir",
        cache.to_str().unwrap(),
        "--text",
        text,
    ];
    let (ok, again, err) = webert(&by_id, &[("WEBERT_REMOTE_HOST", &hub.url)]);
    assert!(ok, "{err}");
    assert_eq!(again, out, "the id gives what the folder gives");
    assert_eq!(hub.requests("1_Pooling/config.json").len(), 1);
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn a_missing_path_beside_a_folder_is_not_asked_of_the_hub() {
    let hub = Hub::start(&[("org/pii", "models/pii", "{}")]);
    let host = ["--remote-host", hub.url.as_str()];
    let ner = ["ner", "--text", "Call John"];
    // `models/` is here: `models/nothing-here` is a path, and the error says so at once.
    let args = [&ner[..], &["--model", "models/nothing-here"], &host[..]].concat();
    let (ok, _, err) = webert(&args, &[]);
    assert!(!ok);
    assert!(
        err.contains("models/nothing-here: no such folder (read as a path, not a Hub id"),
        "{err}"
    );
    assert!(hub.requests("config.json").is_empty(), "the hub was asked");
    // An id-shaped name with no folder beside it goes to the hub, and the error says both.
    let args = [&ner[..], &["--model", "org/nothing-here"], &host[..]].concat();
    let (ok, _, err) = webert(&args, &[]);
    assert!(!ok);
    assert!(
        err.contains("org/nothing-here: no local folder of that name here, and as a Hub id: model org/nothing-here on"),
        "{err}"
    );
}
