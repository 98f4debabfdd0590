//! `webert redact`: the entities found (and the pattern layer's) replaced in the text.

use super::args::{Common, PatternArgs};
use super::input::texts;
use super::load::load;
use super::output::{print, report};
use clap::Args;
use serde::Serialize;
use webert::tasks::ner::{self, Aggregation};
use webert::tasks::redact;
use webert::Result;

#[derive(Args)]
pub struct RedactArgs {
    #[command(flatten)]
    c: Common,
    #[arg(long, value_enum, default_value = "type")]
    style: redact::Style,
    /// The mask of --style mask
    #[arg(long, default_value = redact::DEFAULT_MASK)]
    mask: String,
    #[arg(long, value_enum, default_value = "first")]
    aggregation: Aggregation,
    #[command(flatten)]
    patterns: PatternArgs,
    #[command(flatten)]
    corpus: super::corpus::CorpusArgs,
}

pub async fn run(a: RedactArgs) -> Result<()> {
    let opts = ner::NerOptions {
        aggregation: a.aggregation,
        patterns: a.patterns.layer()?,
        ..Default::default()
    };
    let style = redact::RedactOptions {
        style: a.style,
        mask: Some(a.mask),
    };
    #[derive(Serialize)]
    struct Out {
        text: String,
        entities: Vec<webert::tasks::entity::Entity>,
    }
    let engine = load(&a.c).await?;
    let one = |t: &str, entities: Vec<webert::tasks::entity::Entity>| -> Result<Out> {
        let targets: Vec<redact::Target> = entities.iter().map(Into::into).collect();
        let text = redact::redact(t, &targets, &style)?.text;
        Ok(Out { text, entities })
    };
    if a.corpus.active() {
        report(&engine);
        return super::corpus::run(&a.corpus, &a.c.text, async |items| {
            let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
            let found = ner::ner_many(&engine, &texts, &opts).await?;
            texts.iter().zip(found).map(|(t, e)| one(t, e)).collect()
        })
        .await;
    }
    let mut out = Vec::new();
    for t in texts(&a.c)? {
        let entities = ner::ner(&engine, &t, &opts).await?;
        out.push(one(&t, entities)?);
    }
    print(&engine, out)
}
