//! `webert qa`: extractive question answering over `--context` (or the texts).

use super::args::Common;
use super::input::texts;
use super::load::load;
use super::output::print;
use clap::Args;
use webert::tasks::qa;
use webert::tasks::registry;
use webert::Result;

#[derive(Args)]
pub struct QaArgs {
    #[command(flatten)]
    c: Common,
    #[arg(long)]
    question: String,
    #[arg(long)]
    context: Option<String>,
    #[arg(long, default_value = registry::default_arg("question-answering", "top_k"))]
    top_k: usize,
    #[arg(long)]
    max_seq_len: Option<usize>,
    #[arg(long)]
    doc_stride: Option<usize>,
    #[arg(long, default_value = registry::default_arg("question-answering", "max_question_len"))]
    max_question_len: usize,
    #[arg(long, default_value = registry::default_arg("question-answering", "max_answer_len"))]
    max_answer_len: usize,
    #[arg(long)]
    handle_impossible_answer: bool,
}

pub async fn run(a: QaArgs) -> Result<()> {
    let engine = load(&a.c).await?;
    let contexts = match a.context {
        Some(ctx) => vec![ctx],
        None => texts(&a.c)?,
    };
    let opts = qa::QaOptions {
        top_k: a.top_k,
        max_seq_len: a.max_seq_len,
        doc_stride: a.doc_stride,
        max_question_len: a.max_question_len,
        max_answer_len: a.max_answer_len,
        handle_impossible_answer: a.handle_impossible_answer,
        align_to_words: true,
    };
    let mut out = Vec::new();
    for ctx in &contexts {
        let answers = qa::answer(&engine, &a.question, ctx, &opts).await?;
        out.push(match a.top_k {
            1 => serde_json::json!(answers.first()),
            _ => serde_json::json!(answers),
        });
    }
    print(&engine, out)
}
