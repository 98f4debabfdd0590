//! The CLI's corpus mode (`--input`, `--output`, `--resume`, `--batch`): a JSON line per input
//! line, equal to the single-text answers, error records for bad lines, and a resumed run that
//! completes a cut-off file.
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn webert(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_webert"))
        .current_dir(ROOT)
        .args(args)
        .args(["--backend", "cpu"])
        .output()
        .unwrap();
    let s = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.success(), s(out.stdout), s(out.stderr))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("webert-corpus-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn records(path: &Path) -> Vec<serde_json::Value> {
    (std::fs::read_to_string(path).unwrap().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const TEXTS: [&str; 5] = [
    "Call John Smith at +1 415 555 0132",
    "Mail zoë.müller@beispiel.de today",
    "nothing to see here",
    "Maria García lives in Madrid",
    "Der Kunde Hans Meier, IBAN DE89 3704 0044 0532 0130 00",
];

#[test]
fn ner_lines_answer_as_single_texts_with_error_records_and_resume() {
    let dir = scratch("ner");
    let input = dir.join("in.jsonl");
    let mut lines: Vec<String> = TEXTS.iter().map(|t| t.to_string()).collect();
    lines.insert(1, String::new()); // blank: skipped
    lines.insert(
        2,
        r#"{"text": "Anna Berg, anna@example.com", "id": 7}"#.into(),
    );
    lines.insert(4, r#"{"id": 8}"#.into()); // no text: an error record, the run goes on
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let output = dir.join("out.jsonl");
    let common = ["ner", "--model", "models/pii", "--aggregation", "first"];
    let args = |extra: &[&str]| {
        let mut v = common.to_vec();
        v.extend([
            "--input",
            input.to_str().unwrap(),
            "--output",
            output.to_str().unwrap(),
        ]);
        v.extend(extra);
        v.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        webert(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (ok, _, err) = run(&["--batch", "2"]);
    assert!(ok, "{err}");
    let got = records(&output);
    let numbers: Vec<u64> = got.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [1, 3, 4, 5, 6, 7, 8]);
    assert_eq!(got[1]["id"], 7);
    assert_eq!(got[3]["id"], 8);
    assert_eq!(got[3]["error"], "a JSON line needs a string `text`");
    // Every answered line equals the same text asked alone.
    for r in got.iter().filter(|r| r.get("result").is_some()) {
        let n = r["line"].as_u64().unwrap() as usize;
        let line = &lines[n - 1];
        let text = match serde_json::from_str::<serde_json::Value>(line) {
            Ok(v) => v["text"].as_str().unwrap().to_string(),
            Err(_) => line.clone(),
        };
        let (ok, alone, err) = webert(&[&common[..], &["--text", &text]].concat());
        assert!(ok, "{err}");
        let alone: serde_json::Value = serde_json::from_str(&alone).unwrap();
        // The same entities; scores within float noise (a batch is padded to its longest line).
        let (got, want) = (r["result"].as_array().unwrap(), alone.as_array().unwrap());
        assert_eq!(got.len(), want.len(), "line {n}");
        for (g, w) in got.iter().zip(want) {
            for k in ["entity_group", "word", "start", "end"] {
                assert_eq!(g[k], w[k], "line {n}: {k}");
            }
            let d = (g["score"].as_f64().unwrap() - w["score"].as_f64().unwrap()).abs();
            assert!(d < 1e-5, "line {n}: score {d}");
        }
    }
    assert!(got[0]["result"].as_array().is_some_and(|e| !e.is_empty()));

    // A run cut off mid-record: --resume drops the partial record and answers the rest only.
    let whole = std::fs::read_to_string(&output).unwrap();
    let cut = whole.match_indices('\n').nth(2).unwrap().0 + 1;
    std::fs::write(&output, format!("{}{{\"line\":5,\"res", &whole[..cut])).unwrap();
    let (ok, _, err) = run(&["--resume"]);
    assert!(ok, "{err}");
    let resumed = std::fs::read_to_string(&output).unwrap();
    assert_eq!(
        resumed[..cut],
        whole[..cut],
        "the first records are kept as they were"
    );
    // The rest answered again (batched afresh: spans and labels the same, scores within noise).
    let spans = |text: &str| -> Vec<String> {
        (text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()))
        .map(|r| {
            let e = r["result"].as_array().map(|es| {
                (es.iter())
                    .map(|e| format!("{}@{}-{}", e["entity_group"], e["start"], e["end"]))
                    .collect::<Vec<_>>()
            });
            format!("{} {} {:?} {}", r["line"], r["id"], e, r["error"])
        })
        .collect()
    };
    assert_eq!(spans(&resumed), spans(&whole));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn embed_lines_in_batches_equal_the_batch_answer_and_stdout_works() {
    let dir = scratch("embed");
    let input = dir.join("in.txt");
    std::fs::write(&input, TEXTS.join("\n")).unwrap(); // no final newline
    let (ok, out, err) = webert(&[
        "embed",
        "--model",
        "models/minilm",
        "--input",
        input.to_str().unwrap(),
        "--batch",
        "3",
    ]);
    assert!(ok, "{err}");
    let got: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), TEXTS.len());
    let texts: Vec<&str> = TEXTS.iter().flat_map(|t| ["--text", *t]).collect();
    let (ok, all, err) = webert(&[&["embed", "--model", "models/minilm"][..], &texts].concat());
    assert!(ok, "{err}");
    let all: Vec<Vec<f32>> = serde_json::from_str(&all).unwrap();
    for (r, want) in got.iter().zip(&all) {
        let v: Vec<f32> = serde_json::from_value(r["result"].clone()).unwrap();
        let d = v
            .iter()
            .zip(want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        // Batched with other lengths: padding moves the float sums a little.
        assert!(d < 1e-5, "line {}: {d}", r["line"]);
    }
    // An unreadable --input is an error, not an empty run.
    let (ok, _, err) = webert(&[
        "embed",
        "--model",
        "models/minilm",
        "--input",
        "/no/such/file",
    ]);
    assert!(!ok);
    assert!(err.contains("/no/such/file"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
