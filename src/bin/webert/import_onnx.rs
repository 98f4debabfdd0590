//! `webert import-onnx`: an ONNX model's weights written as safetensors.

use clap::Args;
use std::path::PathBuf;
use webert::{Error, Result};

#[derive(Args)]
pub struct ImportArgs {
    /// The .onnx file
    #[arg(long)]
    onnx: PathBuf,
    #[arg(long)]
    out: PathBuf,
}

pub fn run(a: ImportArgs) -> Result<()> {
    let bytes = std::fs::read(&a.onnx).map_err(|e| Error::Io {
        path: a.onnx.display().to_string(),
        source: e,
    })?;
    // Module names follow the family in the model folder's config.json (`onnx/model.onnx`
    // sits one level below it); BERT's without one.
    let dir = a.onnx.parent();
    let config = [dir, dir.and_then(|d| d.parent())]
        .into_iter()
        .flatten()
        .map(|d| d.join("config.json"))
        .find(|p| p.is_file());
    let family = match config {
        Some(p) => {
            let text = std::fs::read_to_string(&p).map_err(|e| Error::Io {
                path: p.display().to_string(),
                source: e,
            })?;
            webert::model::ModelConfig::from_json(&p.display().to_string(), &text)?.model_type
        }
        None => webert::model::ModelType::Bert,
    };
    let w = webert::model::onnx::import_as(&a.onnx.display().to_string(), &bytes, family)?;
    let st = w.to_safetensors()?;
    std::fs::write(&a.out, st).map_err(|e| Error::Io {
        path: a.out.display().to_string(),
        source: e,
    })?;
    eprintln!("wrote {} tensors to {}", w.len(), a.out.display());
    Ok(())
}
