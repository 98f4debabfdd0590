//! A subcommand's texts: its `--text`s, else the lines of stdin.

use super::args::Common;
use std::io::BufRead;
use webert::{Error, Result};

pub fn texts(c: &Common) -> Result<Vec<String>> {
    if !c.text.is_empty() {
        return Ok(c.text.clone());
    }
    let lines: std::io::Result<Vec<String>> = std::io::stdin().lock().lines().collect();
    let lines = lines.map_err(|e| Error::Io {
        path: "stdin".into(),
        source: e,
    })?;
    if lines.is_empty() {
        return Err(Error::Input(
            "no input: pass --text or lines on stdin".into(),
        ));
    }
    Ok(lines)
}
