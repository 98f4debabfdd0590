//! Token classification with the Hugging Face `TokenClassificationPipeline` rules: per-token
//! softmax, sub-word fusion (`first`/`average`/`max`), B-/I- grouping, overlapping windows
//! merged. Offsets are Unicode code-point indices into the original text.

use super::entity::Entity;
use super::patterns::{self, Patterns};
use super::registry::{self, Call};
use super::{argmax, softmax};
use crate::engine::{Engine, WindowOutput};
use crate::error::Result;
use crate::model::Windowing;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum Aggregation {
    #[default]
    None,
    Simple,
    First,
    Average,
    Max,
}

#[derive(Debug, Clone)]
pub struct NerOptions {
    pub aggregation: Aggregation,
    /// Tokens shared by consecutive windows of a text longer than one window.
    pub stride: usize,
    /// Window length; the model's maximum when `None`.
    pub max_len: Option<usize>,
    pub ignore_labels: Vec<String>,
    /// The pattern layer (structured identifiers, the caller's regexes); off when `None`.
    pub patterns: Option<Patterns>,
}

impl Default for NerOptions {
    fn default() -> Self {
        NerOptions {
            aggregation: Aggregation::None,
            stride: 16,
            max_len: None,
            ignore_labels: vec!["O".into()],
            patterns: None,
        }
    }
}

struct PreEntity {
    word: String,
    scores: Vec<f32>,
    start: usize,
    end: usize,
    index: usize,
    is_subword: bool,
}

/// A token or word with its label, before B-/I- grouping.
struct Tagged {
    label: String,
    score: f32,
    index: Option<usize>,
    word: String,
    start: usize,
    end: usize,
}

pub async fn ner(engine: &Engine, text: &str, opts: &NerOptions) -> Result<Vec<Entity>> {
    let mut all = ner_many(engine, &[text], opts).await?;
    Ok(all.swap_remove(0))
}

/// The entities of each text, every window of every text in one batch (short texts: one forward
/// for all of them instead of one each).
pub async fn ner_many(
    engine: &Engine,
    texts: &[&str],
    opts: &NerOptions,
) -> Result<Vec<Vec<Entity>>> {
    let want = registry::want_head(engine, Call::Tokens)?;
    let max_len = opts
        .max_len
        .unwrap_or(engine.max_len())
        .min(engine.max_len());
    let windowing = Windowing {
        max_len,
        stride: opts.stride,
        only_second: false,
    };
    let mut windows = Vec::new();
    let mut counts = Vec::with_capacity(texts.len());
    for text in texts {
        let w = engine.tokenizer.encode_windows(text, None, windowing)?;
        counts.push(w.len());
        windows.extend(w);
    }
    let outs = engine.run(&windows, want, &[]).await?;
    let mut at = 0;
    let mut answers = Vec::with_capacity(texts.len());
    for (text, n) in texts.iter().zip(counts) {
        let range = at..at + n;
        at += n;
        answers.push(entities(
            engine,
            text,
            &windows[range.clone()],
            &outs[range],
            opts,
        ));
    }
    Ok(answers)
}

/// One text's entities from its windows' logits.
fn entities(
    engine: &Engine,
    text: &str,
    windows: &[tokenizers::Encoding],
    outs: &[WindowOutput],
    opts: &NerOptions,
) -> Vec<Entity> {
    let chars: Vec<char> = text.chars().collect();
    let labels = engine.config.labels(engine.config.id2label.len().max(1));
    let mut all = Vec::new();
    for (enc, out) in windows.iter().zip(outs) {
        let n_labels = out.logits.len() / enc.len().max(1);
        let labels = if labels.len() == n_labels {
            labels.clone()
        } else {
            engine.config.labels(n_labels)
        };
        let pre = pre_entities(engine, enc, &out.logits, n_labels, &chars);
        let tagged = aggregate(engine, pre, opts.aggregation, &labels);
        let entities = if opts.aggregation == Aggregation::None {
            tagged.into_iter().map(|t| t.into_token()).collect()
        } else {
            group_entities(engine, tagged)
        };
        all.extend(
            entities
                .into_iter()
                .filter(|e| !opts.ignore_labels.iter().any(|l| l == e.label())),
        );
    }
    let all = if windows.len() > 1 {
        merge_overlapping(all)
    } else {
        all
    };
    match &opts.patterns {
        Some(p) if !p.is_empty() => patterns::merge(text, all, p.find(text)),
        _ => all,
    }
}

fn pre_entities(
    engine: &Engine,
    enc: &tokenizers::Encoding,
    logits: &[f32],
    n: usize,
    chars: &[char],
) -> Vec<PreEntity> {
    let tok = &engine.tokenizer;
    let special = enc.get_special_tokens_mask();
    let mut out = Vec::new();
    for (idx, (&id, &(start, end))) in enc.get_ids().iter().zip(enc.get_offsets()).enumerate() {
        if special[idx] == 1 {
            continue;
        }
        let (start, end) = (start.min(chars.len()), end.min(chars.len()));
        let word_ref: String = chars[start..end.max(start)].iter().collect();
        let mut word = tok.id_to_token(id);
        let mut is_subword = match &tok.subword_prefix {
            Some(_) => word.chars().count() != end.saturating_sub(start),
            None => start > 0 && !chars[start - 1..(start + 1).min(chars.len())].contains(&' '),
        };
        if Some(id) == tok.unk_id {
            word = word_ref;
            is_subword = false;
        }
        out.push(PreEntity {
            word,
            scores: softmax(&logits[idx * n..(idx + 1) * n]),
            start,
            end,
            index: idx,
            is_subword,
        });
    }
    out
}

fn aggregate(
    engine: &Engine,
    pre: Vec<PreEntity>,
    agg: Aggregation,
    labels: &[String],
) -> Vec<Tagged> {
    if matches!(agg, Aggregation::None | Aggregation::Simple) {
        return pre
            .into_iter()
            .map(|p| {
                let i = argmax(&p.scores);
                Tagged {
                    label: labels[i].clone(),
                    score: p.scores[i],
                    index: Some(p.index),
                    word: p.word,
                    start: p.start,
                    end: p.end,
                }
            })
            .collect();
    }
    let mut words: Vec<Vec<PreEntity>> = Vec::new();
    for p in pre {
        match words.last_mut() {
            Some(group) if p.is_subword => group.push(p),
            _ => words.push(vec![p]),
        }
    }
    words
        .into_iter()
        .map(|group| aggregate_word(engine, &group, agg, labels))
        .collect()
}

fn aggregate_word(
    engine: &Engine,
    group: &[PreEntity],
    agg: Aggregation,
    labels: &[String],
) -> Tagged {
    let tokens: Vec<String> = group.iter().map(|p| p.word.clone()).collect();
    let scores: Vec<f32> = match agg {
        Aggregation::Max => {
            let best = group.iter().fold(&group[0], |best, p| {
                let m = |s: &[f32]| s.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
                if m(&p.scores) > m(&best.scores) {
                    p
                } else {
                    best
                }
            });
            best.scores.clone()
        }
        Aggregation::Average => (0..group[0].scores.len())
            .map(|j| group.iter().map(|p| p.scores[j]).sum::<f32>() / group.len() as f32)
            .collect(),
        _ => group[0].scores.clone(),
    };
    let i = argmax(&scores);
    Tagged {
        label: labels[i].clone(),
        score: scores[i],
        index: None,
        word: engine.tokenizer.tokens_to_string(&tokens),
        start: group[0].start,
        end: group[group.len() - 1].end,
    }
}

impl Tagged {
    fn into_token(self) -> Entity {
        Entity {
            entity: Some(self.label),
            entity_group: None,
            score: self.score,
            index: self.index,
            word: self.word,
            start: self.start,
            end: self.end,
            source: None,
        }
    }
}

/// `B-X`/`I-X` → `("B"|"I", X)`; labels without a prefix continue (`I`).
fn tag(label: &str) -> (bool, &str) {
    match label.strip_prefix("B-") {
        Some(t) => (true, t),
        None => (false, label.strip_prefix("I-").unwrap_or(label)),
    }
}

fn group_entities(engine: &Engine, tagged: Vec<Tagged>) -> Vec<Entity> {
    let mut groups: Vec<Vec<Tagged>> = Vec::new();
    for t in tagged {
        let joins = groups.last().and_then(|g| g.last()).is_some_and(|last| {
            let ((b, name), (_, last_name)) = (tag(&t.label), tag(&last.label));
            name == last_name && !b
        });
        match groups.last_mut() {
            Some(g) if joins => g.push(t),
            _ => groups.push(vec![t]),
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let label = g[0]
                .label
                .split_once('-')
                .map_or(g[0].label.as_str(), |(_, t)| t)
                .to_string();
            let tokens: Vec<String> = g.iter().map(|t| t.word.clone()).collect();
            Entity {
                entity: None,
                entity_group: Some(label),
                score: g.iter().map(|t| t.score).sum::<f32>() / g.len() as f32,
                index: None,
                word: engine.tokenizer.tokens_to_string(&tokens),
                start: g[0].start,
                end: g[g.len() - 1].end,
                source: None,
            }
        })
        .collect()
}

/// Entities from overlapping windows: of those that overlap, the longest (then the
/// highest-scoring) wins, as HF's `aggregate_overlapping_entities`.
fn merge_overlapping(mut entities: Vec<Entity>) -> Vec<Entity> {
    entities.sort_by_key(|e| e.start);
    let mut out: Vec<Entity> = Vec::new();
    let mut iter = entities.into_iter();
    let Some(mut prev) = iter.next() else {
        return out;
    };
    for e in iter {
        if prev.start <= e.start && e.start < prev.end {
            let (len, prev_len) = (e.end - e.start, prev.end - prev.start);
            if len > prev_len || (len == prev_len && e.score > prev.score) {
                prev = e;
            }
        } else {
            out.push(std::mem::replace(&mut prev, e));
        }
    }
    out.push(prev);
    out
}
