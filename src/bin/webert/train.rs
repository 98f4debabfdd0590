//! `webert train-classifier` and `webert classify --head`: a classification head taught from
//! labelled examples on frozen sentence embeddings.

use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;
use webert::engine::{Device, Engine};
use webert::tasks::classify::ClassifyOptions;
use webert::tasks::head::ClassifierHead;
use webert::tasks::train::{self, Example};
use webert::{Error, Result};

#[derive(Args)]
pub struct TrainArgs {
    /// Hugging Face model folder of the encoder (any BERT-family model)
    #[arg(long)]
    model: PathBuf,
    /// JSON lines: {"text": ..., "label": ...}
    #[arg(long)]
    data: PathBuf,
    /// Where to write the head (safetensors)
    #[arg(long)]
    out: PathBuf,
    /// Inverse regularisation strength, as scikit-learn's LogisticRegression(C)
    #[arg(long, default_value_t = 1.0)]
    c: f64,
    #[arg(long, value_enum, default_value = "auto")]
    backend: Device,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source: e,
    }
}

/// The examples of a JSON-lines file; blank lines are skipped, anything else is an error
/// naming its line.
pub fn read_examples(path: &Path) -> Result<Vec<Example>> {
    let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let e: Example = serde_json::from_str(line).map_err(|e| {
            let e = e.to_string();
            let e = e.split(" at line ").next().unwrap_or_default();
            Error::Input(format!(
                "{} line {}: {e} (expected {{\"text\": \"...\", \"label\": \"...\"}})",
                path.display(),
                i + 1
            ))
        })?;
        if e.label.is_empty() {
            return Err(Error::Input(format!(
                "{} line {}: the label is empty",
                path.display(),
                i + 1
            )));
        }
        out.push(e);
    }
    if out.is_empty() {
        return Err(Error::Input(format!("{} has no examples", path.display())));
    }
    Ok(out)
}

pub async fn run(a: TrainArgs) -> Result<()> {
    let examples = read_examples(&a.data)?;
    let files = webert::model::ModelFiles::from_dir(&a.model)?;
    let engine = Engine::load(files, super::load::options(a.backend)?).await?;
    let t = Instant::now();
    let texts: Vec<&str> = examples.iter().map(|e| e.text.as_str()).collect();
    let x = train::features(&engine, &texts, Some(usize::MAX)).await?;
    let embed_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let labels: Vec<&str> = examples.iter().map(|e| e.label.as_str()).collect();
    let id = webert::tasks::head::EncoderId::of(&engine.config);
    let head = train::fit_head(&x, &labels, a.c, id)?;
    let fit_ms = t.elapsed().as_secs_f64() * 1e3;
    let bytes = head.to_safetensors()?;
    std::fs::write(&a.out, &bytes).map_err(|e| io(&a.out, e))?;
    eprintln!(
        "webert: {} examples, labels {:?}, C = {}: embedded in {embed_ms:.0} ms ({}), fitted in \
         {fit_ms:.1} ms ({} L-BFGS iterations{}); wrote {} ({} bytes)",
        examples.len(),
        head.labels,
        a.c,
        engine.backend(),
        head.iterations,
        if head.converged {
            ""
        } else {
            ", NOT converged"
        },
        a.out.display(),
        bytes.len()
    );
    Ok(())
}

pub fn read_head(path: &Path) -> Result<ClassifierHead> {
    let bytes = std::fs::read(path).map_err(|e| io(path, e))?;
    ClassifierHead::from_safetensors(&bytes).map_err(|e| match e {
        Error::Safetensors { msg, .. } => Error::Safetensors {
            file: path.display().to_string(),
            msg,
        },
        e => e,
    })
}

pub async fn classify(
    engine: &Engine,
    head: &ClassifierHead,
    texts: &[String],
    opts: ClassifyOptions,
) -> Result<Vec<Vec<webert::tasks::LabelScore>>> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    train::classify(engine, head, &refs, opts).await
}
