//! `webert ner`: token classification (named entities, PII).

use super::args::{Common, PatternArgs};
use super::input::texts;
use super::load::load;
use super::output::{print, report};
use clap::Args;
use webert::tasks::ner::{self, Aggregation};
use webert::tasks::registry;
use webert::Result;

#[derive(Args)]
pub struct NerArgs {
    #[command(flatten)]
    c: Common,
    #[arg(long, value_enum, default_value = registry::default_arg("token-classification", "aggregation_strategy"))]
    aggregation: Aggregation,
    /// Tokens shared by consecutive windows of long texts
    #[arg(long, default_value = registry::default_arg("token-classification", "stride"))]
    stride: usize,
    /// Window length in tokens (default: the model's maximum)
    #[arg(long)]
    max_length: Option<usize>,
    #[command(flatten)]
    patterns: PatternArgs,
    #[command(flatten)]
    corpus: super::corpus::CorpusArgs,
}

pub async fn run(a: NerArgs) -> Result<()> {
    let engine = load(&a.c).await?;
    let opts = ner::NerOptions {
        aggregation: a.aggregation,
        stride: a.stride,
        max_len: a.max_length,
        patterns: a.patterns.layer()?,
        ..Default::default()
    };
    if a.corpus.active() {
        report(&engine);
        return super::corpus::run(&a.corpus, &a.c.text, async |items| {
            let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
            ner::ner_many(&engine, &texts, &opts).await
        })
        .await;
    }
    let mut out = Vec::new();
    for t in texts(&a.c)? {
        out.push(ner::ner(&engine, &t, &opts).await?);
    }
    print(&engine, out)
}
