//! `webert classify`: sequence classification by the model's head, a taught head (`--head`),
//! or zero-shot over `--labels`.

use super::args::Common;
use super::input::texts;
use super::load::load;
use super::output::{print, report};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use webert::tasks::classify::{self, ScoreFn};
use webert::tasks::registry;
use webert::tasks::zero_shot;
use webert::Result;

#[derive(Args)]
pub struct ClassifyArgs {
    #[command(flatten)]
    c: Common,
    /// Second text of a pair
    #[arg(long)]
    pair: Option<String>,
    #[arg(long)]
    top_k: Option<usize>,
    /// Default: as the config says (softmax, or sigmoid for multi-label and one-logit heads)
    #[arg(long, value_enum)]
    function: Option<ScoreFn>,
    /// Comma-separated candidate labels: zero-shot classification (by entailment on an NLI
    /// classifier, by embedding similarity on any other encoder)
    #[arg(long)]
    labels: Option<String>,
    #[arg(long, alias = "template", default_value = registry::default_arg("zero-shot-classification", "hypothesis_template"))]
    hypothesis_template: String,
    #[arg(long)]
    multi_label: bool,
    /// A head from train-classifier (safetensors): classify with it on the model's embeddings
    #[arg(long, conflicts_with_all = ["labels", "pair"])]
    head: Option<PathBuf>,
    #[command(flatten)]
    corpus: super::corpus::CorpusArgs,
}

pub async fn run(a: ClassifyArgs) -> Result<()> {
    let head = a.head.as_deref().map(super::train::read_head).transpose()?;
    let engine = load(&a.c).await?;
    let opts = classify::ClassifyOptions {
        top_k: a.top_k,
        function: a.function.unwrap_or_default(),
        truncation: a.c.truncation(),
    };
    let labels: Option<Vec<&str>> = a.labels.as_deref().map(|l| {
        (l.split(',').map(str::trim))
            .filter(|l| !l.is_empty())
            .collect()
    });
    let zs = zero_shot::ZeroShotOptions {
        hypothesis_template: a.hypothesis_template.clone(),
        multi_label: a.multi_label,
        truncation: a.c.truncation(),
    };
    let method = zero_shot::method(&engine);
    // One answer per item, the same in both modes: a taught head, zero-shot, or the model's own.
    #[derive(Serialize)]
    #[serde(untagged)]
    enum Answer {
        Labels(Vec<webert::tasks::LabelScore>),
        ZeroShot {
            sequence: String,
            method: zero_shot::Method,
            labels: Vec<String>,
            scores: Vec<f32>,
        },
    }
    let answer = async |items: &[super::corpus::Item]| -> Result<Vec<Answer>> {
        let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
        let labelled = |v: Vec<_>| v.into_iter().map(Answer::Labels).collect();
        if let Some(head) = &head {
            let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
            return Ok(labelled(
                super::train::classify(&engine, head, &owned, opts).await?,
            ));
        }
        if let Some(labels) = &labels {
            let ranked = zero_shot::zero_shot_many(&engine, &texts, labels, &zs).await?;
            let out = (texts.iter().zip(ranked)).map(|(t, r)| Answer::ZeroShot {
                sequence: t.to_string(),
                method,
                labels: r.iter().map(|l| l.label.clone()).collect(),
                scores: r.iter().map(|l| l.score).collect(),
            });
            return Ok(out.collect());
        }
        let inputs: Vec<(&str, Option<&str>)> = (items.iter())
            .map(|i| (i.text.as_str(), i.pair.as_deref().or(a.pair.as_deref())))
            .collect();
        Ok(labelled(classify::classify(&engine, &inputs, opts).await?))
    };
    if a.corpus.active() {
        report(&engine);
        return super::corpus::run(&a.corpus, &a.c.text, answer).await;
    }
    let items: Vec<super::corpus::Item> = (texts(&a.c)?.into_iter().enumerate())
        .map(|(i, text)| super::corpus::Item {
            line: i + 1,
            id: None,
            text,
            pair: None,
        })
        .collect();
    print(&engine, answer(&items).await?)
}
