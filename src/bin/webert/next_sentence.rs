//! `webert next-sentence`: whether `--pair` follows each text (BERT's NSP head).

use super::args::Common;
use super::input::texts;
use super::load::load;
use super::output::print;
use clap::Args;
use webert::tasks::next_sentence;
use webert::Result;

#[derive(Args)]
pub struct NextSentenceArgs {
    #[command(flatten)]
    c: Common,
    /// The sentence that may follow each --text
    #[arg(long)]
    pair: String,
}

pub async fn run(a: NextSentenceArgs) -> Result<()> {
    let engine = load(&a.c).await?;
    let texts = texts(&a.c)?;
    let pairs: Vec<(&str, &str)> = (texts.iter())
        .map(|t| (t.as_str(), a.pair.as_str()))
        .collect();
    let out = next_sentence::next_sentence(&engine, &pairs, a.c.truncation()).await?;
    print(&engine, out)
}
