//! Extractive question answering with the rules of HF's `QuestionAnsweringPipeline`: the
//! context is windowed with a stride, only context tokens (and CLS for "no answer") are
//! candidates, spans are searched in O(L × max_answer_len), answers are aligned to words,
//! and equal answers found in several windows add up their scores.

use super::registry::{self, Call};
use super::softmax;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::model::Windowing;
use serde::Serialize;

#[derive(Debug, Clone)]
pub struct QaOptions {
    pub top_k: usize,
    /// Window length in tokens; `min(model max, 384)` when `None`.
    pub max_seq_len: Option<usize>,
    /// Tokens shared by consecutive windows; `min(max_seq_len / 2, 128)` when `None`.
    pub doc_stride: Option<usize>,
    /// Longer questions are cut to this many tokens.
    pub max_question_len: usize,
    pub max_answer_len: usize,
    pub handle_impossible_answer: bool,
    pub align_to_words: bool,
}

impl Default for QaOptions {
    fn default() -> Self {
        QaOptions {
            top_k: 1,
            max_seq_len: None,
            doc_stride: None,
            max_question_len: 64,
            max_answer_len: 15,
            handle_impossible_answer: false,
            align_to_words: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    pub score: f32,
    pub start: usize,
    pub end: usize,
    pub answer: String,
}

pub async fn answer(
    engine: &Engine,
    question: &str,
    context: &str,
    opts: &QaOptions,
) -> Result<Vec<Answer>> {
    let want = registry::want_head(engine, Call::Answer)?;
    if opts.top_k == 0 || opts.max_answer_len == 0 {
        return Err(Error::Input(
            "top_k and max_answer_len must be at least 1".into(),
        ));
    }
    let max_seq_len = opts.max_seq_len.unwrap_or(384).min(engine.max_len());
    let doc_stride = opts.doc_stride.unwrap_or((max_seq_len / 2).min(128));
    if doc_stride > max_seq_len {
        return Err(Error::Input(format!(
            "doc_stride ({doc_stride}) is larger than max_seq_len ({max_seq_len})"
        )));
    }
    let question = cut_question(engine, question, opts.max_question_len)?;
    let w = Windowing {
        max_len: max_seq_len,
        stride: doc_stride,
        only_second: true,
    };
    let windows = engine
        .tokenizer
        .encode_windows(&question, Some(context), w)?;
    let outs = engine.run(&windows, want, &[]).await?;
    let chars: Vec<char> = context.chars().collect();
    let pre_topk = if opts.align_to_words {
        opts.top_k * 2 + 10
    } else {
        opts.top_k
    };
    let mut answers: Vec<Answer> = Vec::new();
    let mut min_null = f32::INFINITY;
    for (enc, out) in windows.iter().zip(&outs) {
        let seq_ids = enc.get_sequence_ids();
        let cls = engine.tokenizer.cls_id;
        let allowed: Vec<bool> = seq_ids
            .iter()
            .zip(enc.get_ids())
            .map(|(s, &id)| *s == Some(1) || Some(id) == cls)
            .collect();
        let (mut ps, mut pe) = (
            masked_probs(&out.logits, 0, &allowed),
            masked_probs(&out.logits, 1, &allowed),
        );
        if let (Some(s0), Some(e0)) = (ps.first_mut(), pe.first_mut()) {
            min_null = min_null.min(*s0 * *e0);
            (*s0, *e0) = (0.0, 0.0);
        }
        for (s, e, score) in best_spans(&ps, &pe, &allowed, opts.max_answer_len, pre_topk) {
            let (start, end) = char_span(enc, s, e, opts.align_to_words);
            let (start, end) = (
                start.min(chars.len()),
                end.min(chars.len()).max(start.min(chars.len())),
            );
            let text: String = chars[start..end].iter().collect();
            match answers
                .iter_mut()
                .find(|a| a.answer.to_lowercase() == text.to_lowercase())
            {
                Some(a) => a.score += score,
                None => answers.push(Answer {
                    score,
                    start,
                    end,
                    answer: text,
                }),
            }
        }
    }
    if opts.handle_impossible_answer && min_null.is_finite() {
        answers.push(Answer {
            score: min_null,
            start: 0,
            end: 0,
            answer: String::new(),
        });
    }
    answers.sort_by(|a, b| b.score.total_cmp(&a.score));
    answers.truncate(opts.top_k);
    Ok(answers)
}

/// Softmax of one logits column with non-candidate tokens pushed to -10000 (as HF).
fn masked_probs(logits: &[f32], col: usize, allowed: &[bool]) -> Vec<f32> {
    let x: Vec<f32> = allowed
        .iter()
        .enumerate()
        .map(|(i, &ok)| {
            if ok {
                logits.get(i * 2 + col).copied().unwrap_or(-10000.0)
            } else {
                -10000.0
            }
        })
        .collect();
    softmax(&x)
}

/// The `k` best `(start, end, p_start·p_end)` with `start ≤ end < start + max_len`, both
/// candidates, best first.
fn best_spans(
    ps: &[f32],
    pe: &[f32],
    allowed: &[bool],
    max_len: usize,
    k: usize,
) -> Vec<(usize, usize, f32)> {
    let mut best: Vec<(usize, usize, f32)> = Vec::with_capacity(k + 1);
    for s in (0..ps.len()).filter(|&s| allowed[s] && ps[s] > 0.0) {
        for e in s..(s + max_len).min(pe.len()) {
            let score = ps[s] * pe[e];
            if !allowed[e] || score <= 0.0 || (best.len() == k && score <= best[k - 1].2) {
                continue;
            }
            let at = best.partition_point(|b| b.2 >= score);
            best.insert(at, (s, e, score));
            best.truncate(k);
        }
    }
    best
}

/// Character span of tokens `s..=e` of the context, widened to whole words when asked.
fn char_span(enc: &tokenizers::Encoding, s: usize, e: usize, align: bool) -> (usize, usize) {
    let offsets = enc.get_offsets();
    let fallback = (offsets[s].0, offsets[e].1);
    if !align {
        return fallback;
    }
    let word = |t| enc.token_to_word(t).map(|(_, w)| w);
    match (word(s), word(e)) {
        (Some(ws), Some(we)) => match (enc.word_to_chars(ws, 1), enc.word_to_chars(we, 1)) {
            (Some(a), Some(b)) => (a.0, b.1),
            _ => fallback,
        },
        _ => fallback,
    }
}

/// The question cut to `max_tokens` tokens (whole question when shorter).
fn cut_question(engine: &Engine, question: &str, max_tokens: usize) -> Result<String> {
    let enc = engine.tokenizer.encode(question, None)?;
    let content: Vec<(usize, usize)> = enc
        .get_offsets()
        .iter()
        .zip(enc.get_special_tokens_mask())
        .filter(|(_, &sp)| sp == 0)
        .map(|(o, _)| *o)
        .collect();
    if question.trim().is_empty() {
        return Err(Error::Input("the question is empty".into()));
    }
    Ok(match content.get(max_tokens) {
        Some(&(cut, _)) if max_tokens > 0 => question.chars().take(cut).collect(),
        _ => question.to_string(),
    })
}
