//! `webert score`: each text's masked-LM pseudo-log-likelihood, token by token.

use super::args::Common;
use super::input::texts;
use super::load::load;
use super::output::print;
use clap::Args;
use webert::tasks::scoring;
use webert::{Error, Result};

#[derive(Args)]
pub struct ScoreArgs {
    #[command(flatten)]
    c: Common,
    /// Window length in tokens for long texts (default: the model's maximum)
    #[arg(long)]
    max_length: Option<usize>,
}

pub async fn run(a: ScoreArgs) -> Result<()> {
    if a.c.truncation().is_some() {
        return Err(Error::Input(
            "score reads long texts in windows (--max-length); --truncate and --max-tokens do not apply".into(),
        ));
    }
    let engine = load(&a.c).await?;
    let texts = texts(&a.c)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let opts = scoring::ScoreOptions {
        max_len: a.max_length,
    };
    print(&engine, scoring::score(&engine, &refs, opts).await?)
}
