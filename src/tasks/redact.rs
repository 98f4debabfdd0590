//! Redaction of detected entities: spans grown to whole whitespace-delimited tokens and whole
//! grapheme clusters, overlapping or touching spans merged, then each replaced by its type, a
//! fixed mask or a consistent pseudonym. Offsets are Unicode code points, as everywhere in Rust.

use super::entity::Entity;
use crate::error::{Error, Result};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::HashMap;
use unicode_segmentation::UnicodeSegmentation;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum Style {
    /// `[EMAIL]`
    #[default]
    Type,
    /// A fixed mask, whatever the span's length.
    Mask,
    /// `[GIVEN_NAME_1]`: the same text of the same type gets the same number.
    Pseudonym,
}

pub const DEFAULT_MASK: &str = "█████";

#[derive(Debug, Clone, Default)]
pub struct RedactOptions {
    pub style: Style,
    /// The mask of `Style::Mask`; [`DEFAULT_MASK`] when `None`.
    pub mask: Option<String>,
}

/// What to redact: a type and a code-point range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub label: String,
    pub start: usize,
    pub end: usize,
}

impl From<&Entity> for Target {
    fn from(e: &Entity) -> Self {
        Target {
            label: e.label().to_string(),
            start: e.start,
            end: e.end,
        }
    }
}

/// One replaced range of the original text (code points) and what replaced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replaced {
    pub label: String,
    pub start: usize,
    pub end: usize,
    pub replacement: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redacted {
    pub text: String,
    pub spans: Vec<Replaced>,
}

/// `B-EMAIL` / `I-EMAIL` → `EMAIL`.
fn entity_type(label: &str) -> &str {
    label
        .strip_prefix("B-")
        .or_else(|| label.strip_prefix("I-"))
        .unwrap_or(label)
}

pub fn redact(text: &str, targets: &[Target], opts: &RedactOptions) -> Result<Redacted> {
    let chars: Vec<char> = text.chars().collect();
    let bounds = cluster_bounds(text);
    let mut spans = Vec::with_capacity(targets.len());
    for t in targets {
        if t.start > t.end || t.end > chars.len() {
            return Err(Error::Input(format!(
                "entity {} at {}..{} is outside the text ({} characters)",
                t.label,
                t.start,
                t.end,
                chars.len()
            )));
        }
        if t.start == t.end {
            continue;
        }
        let (start, end) = widen(&chars, &bounds, t.start, t.end);
        spans.push(Span {
            label: entity_type(&t.label).to_string(),
            start,
            end,
            covered: t.end - t.start,
            first: t.start,
        });
    }
    let spans = merge(spans);
    Ok(replace(&chars, spans, opts))
}

struct Span {
    label: String,
    start: usize,
    end: usize,
    /// Code points the detected entity itself covered, and where it began: which type a
    /// merged span takes.
    covered: usize,
    first: usize,
}

/// Code-point indices where grapheme clusters begin, and the text's length.
fn cluster_bounds(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    for g in text.graphemes(true) {
        out.push(at);
        at += g.chars().count();
    }
    out.push(at);
    out
}

/// The cluster `[from, to)` of the one that holds code point `i`.
fn cluster_of(bounds: &[usize], i: usize) -> (usize, usize) {
    let k = bounds.partition_point(|&b| b <= i) - 1;
    (bounds[k], bounds[(k + 1).min(bounds.len() - 1)])
}

/// `[start, end)` grown to its whitespace-delimited token, less punctuation and symbols at the
/// token's edges that the entity did not reach, then to whole grapheme clusters.
fn widen(chars: &[char], bounds: &[usize], start: usize, end: usize) -> (usize, usize) {
    let (mut s, mut e) = (start, end);
    while s > 0 && !chars[s - 1].is_whitespace() {
        s -= 1;
    }
    while e < chars.len() && !chars[e].is_whitespace() {
        e += 1;
    }
    // Trim whole clusters without a letter or digit outside the entity: `(Zoë,` → `Zoë`.
    while s < start {
        let (_, to) = cluster_of(bounds, s);
        if to > start || chars[s..to].iter().any(|c| c.is_alphanumeric()) {
            break;
        }
        s = to;
    }
    while e > end {
        let (from, _) = cluster_of(bounds, e - 1);
        if from < end || chars[from..e].iter().any(|c| c.is_alphanumeric()) {
            break;
        }
        e = from;
    }
    let s = cluster_of(bounds, s).0;
    let e = if e == 0 || bounds.binary_search(&e).is_ok() {
        e
    } else {
        cluster_of(bounds, e).1
    };
    (s, e)
}

/// Overlapping spans become one, as do touching spans of one type; a merged span takes the
/// type whose entities covered the most, then the one that came first.
fn merge(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by_key(|s| (s.start, s.end));
    // Per merged span: each type's covered code points and first start.
    type Votes = HashMap<String, (usize, usize)>;
    let mut out: Vec<(Span, Votes)> = Vec::new();
    for s in spans {
        if let Some((last, votes)) = out.last_mut() {
            if s.start < last.end || (s.start == last.end && s.label == last.label) {
                last.end = last.end.max(s.end);
                let v = votes.entry(s.label).or_insert((0, s.first));
                v.0 += s.covered;
                v.1 = v.1.min(s.first);
                continue;
            }
        }
        let votes = HashMap::from([(s.label.clone(), (s.covered, s.first))]);
        out.push((s, votes));
    }
    out.into_iter()
        .map(|(mut span, votes)| {
            // Most covered, then the earliest, then the label's order: the same for any input order.
            let best = votes
                .into_iter()
                .max_by_key(|(label, (covered, first))| {
                    (*covered, Reverse(*first), Reverse(label.clone()))
                })
                .map(|(label, _)| label);
            span.label = best.unwrap_or(span.label);
            span
        })
        .collect()
}

/// The key under which two mentions are the same: case, spacing and edge punctuation aside.
fn pseudonym_key(label: &str, mention: &[char]) -> (String, String) {
    let s: String = mention.iter().collect();
    let words: Vec<String> = s.split_whitespace().map(|w| w.to_lowercase()).collect();
    let joined = words.join(" ");
    let trimmed = joined.trim_matches(|c: char| !c.is_alphanumeric());
    (label.to_string(), trimmed.to_string())
}

fn replace(chars: &[char], spans: Vec<Span>, opts: &RedactOptions) -> Redacted {
    let mut text = String::with_capacity(chars.len());
    let mut out = Vec::with_capacity(spans.len());
    let mut numbers: HashMap<(String, String), usize> = HashMap::new();
    let mut per_type: HashMap<String, usize> = HashMap::new();
    let mut at = 0;
    for s in spans {
        text.extend(&chars[at..s.start]);
        let replacement = match opts.style {
            Style::Type => format!("[{}]", s.label),
            Style::Mask => opts.mask.clone().unwrap_or_else(|| DEFAULT_MASK.into()),
            Style::Pseudonym => {
                let key = pseudonym_key(&s.label, &chars[s.start..s.end]);
                let next = per_type.get(&s.label).copied().unwrap_or(0) + 1;
                let n = *numbers.entry(key).or_insert_with(|| {
                    per_type.insert(s.label.clone(), next);
                    next
                });
                format!("[{}_{n}]", s.label)
            }
        };
        text.push_str(&replacement);
        at = s.end;
        out.push(Replaced {
            label: s.label,
            start: s.start,
            end: s.end,
            replacement,
        });
    }
    text.extend(&chars[at..]);
    Redacted { text, spans: out }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(label: &str, text: &str, part: &str) -> Target {
        let b = text.find(part).unwrap();
        let start = text[..b].chars().count();
        Target {
            label: label.into(),
            start,
            end: start + part.chars().count(),
        }
    }

    fn run(text: &str, targets: &[Target], style: Style) -> String {
        let opts = RedactOptions { style, mask: None };
        redact(text, targets, &opts).unwrap().text
    }

    #[test]
    fn email_pieces_merge_into_one_token() {
        let text = "Write to zoë.müller@beispiel.de or call.";
        let ents = [
            t("B-EMAIL", text, "zoë.müller"),
            t("B-EMAIL", text, "beispiel"),
        ];
        assert_eq!(run(text, &ents, Style::Type), "Write to [EMAIL] or call.");
    }

    #[test]
    fn edge_punctuation_outside_the_entity_stays() {
        let text = "(Zoë Müller), from Zürich.";
        let ents = [
            t("GIVEN_NAME", text, "Zoë"),
            t("SURNAME", text, "Müll"),
            t("CITY", text, "Zürich"),
        ];
        assert_eq!(
            run(text, &ents, Style::Type),
            "([GIVEN_NAME] [SURNAME]), from [CITY]."
        );
    }

    #[test]
    fn never_splits_an_emoji_from_its_variation_selector() {
        let text = "Soy María García\u{2764}\u{FE0F} de Madrid";
        let b = text.find('\u{FE0F}').unwrap();
        let end = text[..b].chars().count(); // ends between ❤ and U+FE0F
        let start = text[..text.find("García").unwrap()].chars().count();
        let ents = [Target {
            label: "SURNAME".into(),
            start,
            end,
        }];
        assert_eq!(
            run(text, &ents, Style::Type),
            "Soy María [SURNAME] de Madrid"
        );
    }

    #[test]
    fn pseudonyms_are_consistent_and_masks_fixed() {
        let text = "Anna met Bob. Later anna called BOB and Carl.";
        let ents: Vec<Target> = [(0, 4), (9, 12), (20, 24), (32, 35), (40, 44)]
            .into_iter()
            .map(|(s, e)| Target {
                label: "B-PERSON".into(),
                start: s,
                end: e,
            })
            .collect();
        assert_eq!(
            run(text, &ents, Style::Pseudonym),
            "[PERSON_1] met [PERSON_2]. Later [PERSON_1] called [PERSON_2] and [PERSON_3]."
        );
        assert_eq!(
            run(text, &ents[..2], Style::Mask),
            "█████ met █████. Later anna called BOB and Carl."
        );
    }

    #[test]
    fn types_separated_by_space_stay_apart_and_overlaps_take_the_larger_type() {
        let text = "Ana Lopez, ana.lopez@mail.com";
        let ents = [
            t("GIVEN_NAME", text, "Ana"),
            t("SURNAME", text, "Lopez"),
            t("GIVEN_NAME", text, "ana"),
            t("EMAIL", text, "lopez@mail.com"),
        ];
        assert_eq!(
            run(text, &ents, Style::Type),
            "[GIVEN_NAME] [SURNAME], [EMAIL]"
        );
    }

    #[test]
    fn offsets_outside_the_text_are_an_error() {
        let bad = [Target {
            label: "X".into(),
            start: 2,
            end: 9,
        }];
        let err = redact("abc", &bad, &RedactOptions::default()).unwrap_err();
        assert!(err.to_string().contains("outside the text"), "{err}");
    }
}
