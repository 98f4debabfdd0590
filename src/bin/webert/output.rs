//! What a subcommand prints: its answers as JSON on stdout, the backend that ran on stderr.

use serde::Serialize;
use webert::engine::Engine;
use webert::{Error, Result};

/// One item as itself, several as a list; then the backend that ran on stderr.
pub fn print<T: Serialize>(engine: &Engine, items: Vec<T>) -> Result<()> {
    report(engine);
    let json = if items.len() == 1 {
        serde_json::to_string_pretty(&items[0])
    } else {
        serde_json::to_string_pretty(&items)
    };
    println!("{}", json.map_err(|e| Error::Input(e.to_string()))?);
    Ok(())
}

/// The backend that ran, on stderr: with why the GPU was given up, or the probe's verdict.
pub fn report(engine: &Engine) {
    match (engine.gpu_failure(), engine.probe()) {
        (Some(why), _) => {
            eprintln!("webert: backend {} (GPU given up: {why})", engine.backend())
        }
        (None, Some(probe)) => eprintln!("webert: backend {} ({probe})", engine.backend()),
        (None, None) => eprintln!("webert: backend {}", engine.backend()),
    }
}
