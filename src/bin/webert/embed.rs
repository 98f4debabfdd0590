//! `webert embed`: sentence embeddings, or texts ranked against `--query`.

use super::args::Common;
use super::input::texts;
use super::load::load;
use super::output::{print, report};
use clap::Args;
use serde::Serialize;
use webert::tasks::embed::{self, Pooling};
use webert::Result;

#[derive(Args)]
pub struct EmbedArgs {
    #[command(flatten)]
    c: Common,
    /// Pooling (default: a sentence-transformers folder's own, else mean)
    #[arg(long, value_enum)]
    pooling: Option<Pooling>,
    /// L2-normalise (default: where a sentence-transformers folder has a Normalize module)
    #[arg(long, conflicts_with = "no_normalize")]
    normalize: bool,
    /// Do not normalise, even where the folder's modules.json says to
    #[arg(long)]
    no_normalize: bool,
    /// Rank the texts by cosine similarity to this query
    #[arg(long, conflicts_with_all = ["input", "output"])]
    query: Option<String>,
    #[command(flatten)]
    corpus: super::corpus::CorpusArgs,
}

pub async fn run(a: EmbedArgs) -> Result<()> {
    let engine = load(&a.c).await?;
    let normalize = match (a.normalize, a.no_normalize) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let opts =
        embed::EmbedOptions::for_model(&engine.config, a.pooling, normalize, a.c.truncation())?;
    if a.corpus.active() {
        report(&engine);
        return super::corpus::run(&a.corpus, &a.c.text, async |items| {
            let refs: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
            let vectors = embed::embed(&engine, &refs, opts).await?;
            Ok(vectors)
        })
        .await;
    }
    let texts = texts(&a.c)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let Some(q) = a.query else {
        let out = embed::embed(&engine, &refs, opts).await?;
        return print(&engine, out);
    };
    #[derive(Serialize)]
    struct Ranked<'a> {
        corpus_id: usize,
        score: f32,
        text: &'a str,
    }
    let ranked = embed::rank(&engine, &q, &refs, opts).await?;
    let out: Vec<Ranked> = (ranked.into_iter())
        .map(|(i, score)| Ranked {
            corpus_id: i,
            score,
            text: refs[i],
        })
        .collect();
    // A ranking is always a list, even of one.
    print(&engine, vec![out])
}
