//! Corpus mode: texts from a file (or stdin) line by line, answers as JSON lines, streamed in
//! batches so that memory stays flat however many lines there are; a progress line on a
//! terminal, `--resume` after an interrupted run, and an error record for a line that fails
//! instead of stopping the run.

use clap::Args;
use serde::Serialize;
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::time::Instant;
use webert::{Error, Result};

#[derive(Args)]
pub struct CorpusArgs {
    /// Read texts from FILE (`-`: stdin), one per line: plain text, a JSON string, or a JSON
    /// object with `text` (and optional `id`, `text_pair`); blank lines are skipped
    #[arg(long, value_name = "FILE")]
    pub input: Option<String>,
    /// Write a JSON line per input line to FILE (`-`: stdout): `{"line", "id"?, "result"}`, or
    /// `{"line", "id"?, "error"}` for a line that failed
    #[arg(long, value_name = "FILE")]
    pub output: Option<String>,
    /// Skip the input lines --output already answers, and append to it
    #[arg(long, requires = "output")]
    pub resume: bool,
    /// Lines computed together
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub batch: u32,
}

/// One input line.
pub struct Item {
    pub line: usize,
    pub id: Option<Value>,
    pub text: String,
    pub pair: Option<String>,
}

impl CorpusArgs {
    /// Whether the command runs in corpus mode (else it prints one JSON document as before).
    pub fn active(&self) -> bool {
        self.input.is_some() || self.output.is_some()
    }
}

fn io(path: &str, source: std::io::Error) -> Error {
    Error::Io {
        path: path.into(),
        source,
    }
}

/// A line as an item: a JSON object with `text`, a JSON string, or the line itself; else why
/// not (with the object's `id` where it has one).
fn parse(line: usize, raw: &str) -> std::result::Result<Item, (Option<Value>, String)> {
    let item = |text, id, pair| Item {
        line,
        id,
        text,
        pair,
    };
    let t = raw.trim_start();
    if t.starts_with('{') {
        let v: Value =
            serde_json::from_str(t).map_err(|e| (None, format!("not a JSON object: {e}")))?;
        let id = v.get("id").cloned();
        let Some(text) = v.get("text").and_then(Value::as_str) else {
            return Err((id, "a JSON line needs a string `text`".into()));
        };
        let pair = match v.get("text_pair") {
            None | Some(Value::Null) => None,
            Some(Value::String(p)) => Some(p.clone()),
            Some(_) => return Err((id, "`text_pair` must be a string".into())),
        };
        return Ok(item(text.to_string(), id, pair));
    }
    if t.starts_with('"') {
        if let Ok(s) = serde_json::from_str::<String>(t) {
            return Ok(item(s, None, None));
        }
    }
    Ok(item(raw.to_string(), None, None))
}

/// The last input line `path` already answers, after cutting a partial last line off it.
fn answered(path: &str) -> Result<usize> {
    let f = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io(path, e)),
    };
    // Streamed, so that resuming a large output takes no more memory than a line.
    let mut reader = BufReader::new(&f);
    let (mut last, mut read, mut whole) = (0, 0u64, 0u64);
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(|e| io(path, e))?;
        read += n as u64;
        let record = (line.ends_with('\n'))
            .then(|| serde_json::from_str::<Value>(&line).ok())
            .flatten();
        match record.and_then(|v| v.get("line").and_then(Value::as_u64)) {
            Some(k) if n > 0 => (last, whole) = (k as usize, read),
            _ => break,
        }
    }
    if whole < f.metadata().map_err(|e| io(path, e))?.len() {
        f.set_len(whole).map_err(|e| io(path, e))?;
    }
    Ok(last)
}

/// Lines, ETA and rate on stderr when it is a terminal, at most 5 times a second.
struct Progress {
    on: bool,
    total: Option<usize>,
    start: Instant,
    shown: Instant,
    done: usize,
}

impl Progress {
    fn new(total: Option<usize>) -> Progress {
        let now = Instant::now();
        Progress {
            on: std::io::stderr().is_terminal(),
            total,
            start: now,
            shown: now,
            done: 0,
        }
    }

    fn add(&mut self, n: usize, last: bool) {
        self.done += n;
        if !self.on || (!last && self.shown.elapsed().as_millis() < 200) {
            return;
        }
        self.shown = Instant::now();
        let rate = self.done as f64 / self.start.elapsed().as_secs_f64().max(1e-9);
        let of = self.total.map_or(String::new(), |t| format!("/{t}"));
        let eta = match self.total {
            Some(t) if rate > 0.0 && t > self.done => {
                format!(", ETA {:.0} s", (t - self.done) as f64 / rate)
            }
            _ => String::new(),
        };
        eprint!(
            "\rwebert: {}{of} lines, {rate:.1} lines/s{eta}   ",
            self.done
        );
        if last {
            eprintln!();
        }
    }
}

/// Runs `answer` over the input in batches and writes a record per line. `answer` gets a
/// batch's items and returns one result per item; a batch that fails as a whole is run again
/// one line at a time, so that only the lines at fault get error records.
pub async fn run<F, T>(args: &CorpusArgs, texts: &[String], mut answer: F) -> Result<()>
where
    F: AsyncFnMut(&[Item]) -> Result<Vec<T>>,
    T: Serialize,
{
    let input_name = args.input.clone().unwrap_or_else(|| "-".into());
    let (reader, total): (Box<dyn BufRead>, Option<usize>) = match args.input.as_deref() {
        None if !texts.is_empty() => {
            let joined: String = texts
                .iter()
                .map(|t| format!("{}\n", t.replace('\n', " ")))
                .collect();
            (Box::new(std::io::Cursor::new(joined)), Some(texts.len()))
        }
        None | Some("-") => (Box::new(BufReader::new(std::io::stdin())), None),
        Some(path) => {
            let count = BufReader::new(File::open(path).map_err(|e| io(path, e))?)
                .lines()
                .count();
            let f = File::open(path).map_err(|e| io(path, e))?;
            (Box::new(BufReader::new(f)), Some(count))
        }
    };
    let output = args.output.as_deref().unwrap_or("-");
    let skip = if args.resume && output != "-" {
        answered(output)?
    } else {
        0
    };
    let mut out: Box<dyn Write> = match output {
        "-" => Box::new(std::io::stdout().lock()),
        path => {
            let f = OpenOptions::new()
                .create(true)
                .write(true)
                .append(args.resume)
                .truncate(!args.resume)
                .open(path)
                .map_err(|e| io(path, e))?;
            Box::new(std::io::BufWriter::new(f))
        }
    };
    let mut progress = Progress::new(total.map(|t| t.saturating_sub(skip)));
    let mut batch: Vec<Item> = Vec::new();
    let mut records: Vec<(usize, Option<Value>, std::result::Result<String, String>)> = Vec::new();
    let mut lines = reader.lines().enumerate();
    let mut batch_due = false;
    loop {
        let next = lines.next();
        let end = next.is_none();
        if let Some((i, line)) = next {
            let line_no = i + 1;
            let raw = line.map_err(|e| io(&input_name, e))?;
            if line_no > skip && !raw.trim().is_empty() {
                match parse(line_no, &raw) {
                    Ok(item) => batch.push(item),
                    Err((id, e)) => records.push((line_no, id, Err(e))),
                }
                if records.len() > 4 * args.batch as usize {
                    // Many unreadable lines in a row: written without waiting for a batch.
                    batch_due = true;
                }
            }
        }
        let flush_errors = std::mem::take(&mut batch_due) && batch.is_empty();
        let processed = batch.len() >= args.batch as usize || (end && !batch.is_empty());
        if processed {
            let answers = match answer(&batch).await {
                Ok(a) if a.len() == batch.len() => a
                    .iter()
                    .map(|v| json(v).map_err(|e| e.to_string()))
                    .collect(),
                _ => {
                    let mut each = Vec::with_capacity(batch.len());
                    for item in &batch {
                        let one = answer(std::slice::from_ref(item)).await;
                        let first = one.map(|v| v.into_iter().next());
                        each.push(match first {
                            Ok(Some(v)) => Ok(json(&v)?),
                            Ok(None) => Err("no answer for this line".into()),
                            Err(e) => Err(e.to_string()),
                        });
                    }
                    each
                }
            };
            for (item, a) in batch.drain(..).zip(answers) {
                records.push((item.line, item.id, a));
            }
        }
        // Records go out only with a batch, so that the file is in line order (and --resume
        // can trust its last line) even where a line failed to parse.
        if processed || flush_errors || end {
            records.sort_by_key(|r| r.0);
            let n = records.len();
            for (line, id, result) in records.drain(..) {
                let id = id.map_or(String::new(), |id| format!(",\"id\":{id}"));
                let rest = match result {
                    Ok(answer) => format!("\"result\":{answer}"),
                    Err(e) => format!("\"error\":{}", Value::String(e)),
                };
                writeln!(out, "{{\"line\":{line}{id},{rest}}}").map_err(|e| io(output, e))?;
            }
            out.flush().map_err(|e| io(output, e))?;
            progress.add(n, end);
        }
        if end {
            return Ok(());
        }
    }
}

/// One answer as JSON text, as its own serializer writes it (f32 scores stay short).
fn json<T: Serialize>(answer: &T) -> Result<String> {
    serde_json::to_string(answer).map_err(|e| Error::Input(e.to_string()))
}
