//! Task requests from JavaScript as JSON, answered as JSON with the Hugging Face pipelines'
//! field names. Character offsets leave as UTF-16 indices (what `String.prototype.slice` takes);
//! the engine works in Unicode code points.

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::tasks::classify::{classify, ClassifyOptions, ScoreFn};
use crate::tasks::embed::{self, EmbedOptions, Pooling};
use crate::tasks::fill_mask::{fill_mask, DEFAULT_TOP_K};
use crate::tasks::ner::{ner, Aggregation, NerOptions};
use crate::tasks::next_sentence::next_sentence;
use crate::tasks::patterns::{CustomPattern, Patterns};
use crate::tasks::qa::{answer, QaOptions};
use crate::tasks::redact::{self, RedactOptions, Style, Target};
use crate::tasks::registry::{self, Call};
use crate::tasks::scoring::{score, ScoreOptions};
use crate::tasks::zero_shot::{self, zero_shot_many, ZeroShotOptions};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// `truncation: true` cuts at the model's limit, a number at that many tokens.
#[derive(Deserialize, Clone, Copy)]
#[serde(untagged)]
enum Truncation {
    On(bool),
    At(usize),
}

fn truncation(t: Option<Truncation>) -> Option<usize> {
    match t? {
        Truncation::On(true) => Some(usize::MAX),
        Truncation::On(false) => None,
        Truncation::At(n) => Some(n),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextPair {
    text: String,
    text_pair: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassifyRequest {
    inputs: Vec<TextPair>,
    /// `None` returns every label.
    top_k: Option<usize>,
    function_to_apply: Option<ScoreFn>,
    truncation: Option<Truncation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NerRequest {
    texts: Vec<String>,
    aggregation_strategy: Option<Aggregation>,
    stride: Option<usize>,
    max_length: Option<usize>,
    ignore_labels: Option<Vec<String>>,
    /// The pattern layer's built-in identifiers.
    patterns: Option<bool>,
    custom_patterns: Option<Vec<CustomPattern>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QaRequest {
    question: String,
    context: String,
    top_k: Option<usize>,
    max_seq_len: Option<usize>,
    doc_stride: Option<usize>,
    max_question_len: Option<usize>,
    max_answer_len: Option<usize>,
    handle_impossible_answer: Option<bool>,
    align_to_words: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmbedRequest {
    texts: Vec<String>,
    /// `mean` (default), `cls`, `max`, or `none` for every token's hidden state.
    pooling: Option<EmbedPooling>,
    normalize: Option<bool>,
    truncation: Option<Truncation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RankRequest {
    query: String,
    documents: Vec<String>,
    pooling: Option<Pooling>,
    truncation: Option<Truncation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FillMaskRequest {
    texts: Vec<String>,
    top_k: Option<usize>,
    truncation: Option<Truncation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SentencePair {
    text: String,
    text_pair: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NextSentenceRequest {
    inputs: Vec<SentencePair>,
    truncation: Option<Truncation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoreRequest {
    texts: Vec<String>,
    /// Window length in tokens (default: the model's maximum).
    max_length: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ZeroShotRequest {
    texts: Vec<String>,
    candidate_labels: Vec<String>,
    hypothesis_template: Option<String>,
    multi_label: Option<bool>,
    truncation: Option<Truncation>,
}

/// Pooling for `feature-extraction`: a pooled vector per text, or (`none`) every token's.
#[derive(Deserialize, Clone, Copy, PartialEq, Debug, Default)]
#[serde(rename_all = "lowercase")]
enum EmbedPooling {
    #[default]
    Mean,
    Cls,
    Max,
    #[serde(rename = "last_token")]
    LastToken,
    None,
}

pub(crate) fn parse<T: DeserializeOwned>(task: &str, json: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|e| {
        // The request is JSON the package wrote: where in it says nothing to the caller.
        let e = e.to_string().replace("unknown variant", "unknown value");
        let e = e.split(" at line ").next().unwrap_or_default();
        Error::Input(format!("{task} options: {e}"))
    })
}

pub(crate) fn to_json<T: Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::Input(e.to_string()))
}

/// `utf16[i]` is the UTF-16 index of code point `i`; one extra entry for the end.
fn utf16_indices(text: &str) -> Vec<usize> {
    let mut out = Vec::with_capacity(text.len() + 1);
    let mut at = 0;
    for c in text.chars() {
        out.push(at);
        at += c.len_utf16();
    }
    out.push(at);
    out
}

fn to_utf16(map: &[usize], cp: usize) -> usize {
    map[cp.min(map.len() - 1)]
}

/// The pattern layer a request asks for: built-ins with `patterns: true`, the caller's own
/// with `custom_patterns`; `None` when neither.
pub(crate) fn pattern_layer(
    builtin: Option<bool>,
    custom: Option<&[CustomPattern]>,
) -> Result<Option<Patterns>> {
    let p = Patterns::new(builtin.unwrap_or(false), custom.unwrap_or_default())?;
    Ok((!p.is_empty()).then_some(p))
}

/// The code point that UTF-16 index `u` falls on; inside a surrogate pair, the pair's own
/// code point (`up: false`, a start) or the next one (`up: true`, an end).
fn from_utf16(map: &[usize], u: usize, up: bool) -> Option<usize> {
    if u > *map.last()? {
        return None;
    }
    let k = map.partition_point(|&x| x < u);
    Some(if map[k] == u || up { k } else { k - 1 })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RedactEntity {
    label: String,
    start: usize,
    end: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RedactRequest {
    style: Option<Style>,
    mask: Option<String>,
}

/// Redaction for JS: entities (JSON `[{label, start, end}]`, UTF-16 offsets) and options
/// (JSON `{style, mask}`) in, the redacted text out.
pub fn redact(text: &str, entities: &str, options: &str) -> Result<String> {
    let list: Vec<RedactEntity> = parse("redact entities", entities)?;
    let r: RedactRequest = parse("redact", options)?;
    let map = utf16_indices(text);
    let mut targets = Vec::with_capacity(list.len());
    for e in list {
        let range = from_utf16(&map, e.start, false).zip(from_utf16(&map, e.end, true));
        let Some((start, end)) = range.filter(|_| e.start <= e.end) else {
            return Err(Error::Input(format!(
                "entity {} at {}..{} is outside the text ({} UTF-16 code units)",
                e.label,
                e.start,
                e.end,
                map[map.len() - 1]
            )));
        };
        targets.push(Target {
            label: e.label,
            start,
            end,
        });
    }
    let opts = RedactOptions {
        style: r.style.unwrap_or_default(),
        mask: r.mask,
    };
    Ok(redact::redact(text, &targets, &opts)?.text)
}

pub async fn call(engine: &Engine, task: &str, json: &str) -> Result<String> {
    let Some(spec) = registry::find(task) else {
        return Err(Error::Input(format!(
            "unknown task `{task}`; supported: {}",
            registry::names().join(", ")
        )));
    };
    let task = spec.name;
    match spec.call {
        Call::Classify => {
            let r: ClassifyRequest = parse(task, json)?;
            let inputs: Vec<(&str, Option<&str>)> = r
                .inputs
                .iter()
                .map(|p| (p.text.as_str(), p.text_pair.as_deref()))
                .collect();
            let opts = ClassifyOptions {
                top_k: r.top_k,
                function: r.function_to_apply.unwrap_or_default(),
                truncation: truncation(r.truncation),
            };
            to_json(&classify(engine, &inputs, opts).await?)
        }
        Call::Tokens => {
            let r: NerRequest = parse(task, json)?;
            let defaults = NerOptions::default();
            let opts = NerOptions {
                aggregation: r.aggregation_strategy.unwrap_or(defaults.aggregation),
                stride: r.stride.unwrap_or(defaults.stride),
                max_len: r.max_length,
                ignore_labels: r.ignore_labels.unwrap_or(defaults.ignore_labels),
                patterns: pattern_layer(r.patterns, r.custom_patterns.as_deref())?,
            };
            let mut out = Vec::with_capacity(r.texts.len());
            for text in &r.texts {
                let map = utf16_indices(text);
                let mut entities = ner(engine, text, &opts).await?;
                for e in &mut entities {
                    (e.start, e.end) = (to_utf16(&map, e.start), to_utf16(&map, e.end));
                }
                out.push(entities);
            }
            to_json(&out)
        }
        Call::Answer => {
            let r: QaRequest = parse(task, json)?;
            let d = QaOptions::default();
            let opts = QaOptions {
                top_k: r.top_k.unwrap_or(d.top_k),
                max_seq_len: r.max_seq_len,
                doc_stride: r.doc_stride,
                max_question_len: r.max_question_len.unwrap_or(d.max_question_len),
                max_answer_len: r.max_answer_len.unwrap_or(d.max_answer_len),
                handle_impossible_answer: r
                    .handle_impossible_answer
                    .unwrap_or(d.handle_impossible_answer),
                align_to_words: r.align_to_words.unwrap_or(d.align_to_words),
            };
            let map = utf16_indices(&r.context);
            let mut answers = answer(engine, &r.question, &r.context, &opts).await?;
            for a in &mut answers {
                (a.start, a.end) = (to_utf16(&map, a.start), to_utf16(&map, a.end));
            }
            to_json(&answers)
        }
        Call::Embed => {
            let r: EmbedRequest = parse(task, json)?;
            let trunc = truncation(r.truncation);
            let pooling = match r.pooling.unwrap_or_default() {
                EmbedPooling::Mean => Some(Pooling::Mean),
                EmbedPooling::Cls => Some(Pooling::Cls),
                EmbedPooling::Max => Some(Pooling::Max),
                EmbedPooling::LastToken => Some(Pooling::LastToken),
                EmbedPooling::None => None,
            };
            let Some(pooling) = pooling else {
                let inputs: Vec<(&str, Option<&str>)> =
                    r.texts.iter().map(|t| (t.as_str(), None)).collect();
                let mut states = embed::hidden_states(engine, &inputs, trunc).await?;
                if r.normalize == Some(true) {
                    states
                        .iter_mut()
                        .flatten()
                        .for_each(|v| embed::l2_normalize(v));
                }
                return to_json(&states);
            };
            let opts = EmbedOptions {
                pooling,
                normalize: r.normalize.unwrap_or_default(),
                truncation: trunc,
            };
            let texts: Vec<&str> = r.texts.iter().map(String::as_str).collect();
            to_json(&embed::embed(engine, &texts, opts).await?)
        }
        Call::Rank => {
            #[derive(Serialize)]
            struct Ranked {
                corpus_id: usize,
                score: f32,
            }
            let r: RankRequest = parse("similarity", json)?;
            let opts = EmbedOptions {
                pooling: r.pooling.unwrap_or_default(),
                normalize: true,
                truncation: truncation(r.truncation),
            };
            let docs: Vec<&str> = r.documents.iter().map(String::as_str).collect();
            let ranked = embed::rank(engine, &r.query, &docs, opts).await?;
            let out: Vec<Ranked> = ranked
                .into_iter()
                .map(|(corpus_id, score)| Ranked { corpus_id, score })
                .collect();
            to_json(&out)
        }
        Call::FillMask => {
            let r: FillMaskRequest = parse(task, json)?;
            let mut out = Vec::with_capacity(r.texts.len());
            for t in &r.texts {
                out.push(
                    fill_mask(
                        engine,
                        t,
                        r.top_k.unwrap_or(DEFAULT_TOP_K),
                        truncation(r.truncation),
                    )
                    .await?,
                );
            }
            to_json(&out)
        }
        Call::NextSentence => {
            let r: NextSentenceRequest = parse(task, json)?;
            let pairs: Vec<(&str, &str)> = (r.inputs.iter())
                .map(|p| (p.text.as_str(), p.text_pair.as_str()))
                .collect();
            to_json(&next_sentence(engine, &pairs, truncation(r.truncation)).await?)
        }
        Call::Score => {
            let r: ScoreRequest = parse(task, json)?;
            let texts: Vec<&str> = r.texts.iter().map(String::as_str).collect();
            let opts = ScoreOptions {
                max_len: r.max_length,
            };
            let mut out = score(engine, &texts, opts).await?;
            for (scored, text) in out.iter_mut().zip(&texts) {
                let map = utf16_indices(text);
                for t in &mut scored.tokens {
                    (t.start, t.end) = (to_utf16(&map, t.start), to_utf16(&map, t.end));
                }
            }
            to_json(&out)
        }
        Call::ZeroShot => {
            let r: ZeroShotRequest = parse(task, json)?;
            let d = ZeroShotOptions::default();
            let opts = ZeroShotOptions {
                hypothesis_template: r.hypothesis_template.unwrap_or(d.hypothesis_template),
                multi_label: r.multi_label.unwrap_or(d.multi_label),
                truncation: truncation(r.truncation),
            };
            let labels: Vec<&str> = r.candidate_labels.iter().map(String::as_str).collect();
            let texts: Vec<&str> = r.texts.iter().map(String::as_str).collect();
            to_json(&zero_shot_many(engine, &texts, &labels, &opts).await?)
        }
    }
}

pub fn info(engine: &Engine) -> String {
    let c = &engine.config;
    serde_json::json!({
        "backend": engine.backend(),
        "gpu_failure": engine.gpu_failure(),
        "int_kernel": engine.int_kernel(),
        "probe": engine.probe().map(|p| serde_json::json!({
            "adapter": p.adapter,
            "tokens": p.tokens,
            "gpu_ms": p.gpu_ms,
            "cpu_ms": p.cpu_ms,
            "agreement": p.agreement,
        })),
        "model_type": c.model_type.name(),
        "task": registry::head_task(c.architecture),
        "tasks": registry::tasks_for(c.architecture),
        "labels": c.id2label,
        "zero_shot": zero_shot::method(engine),
        "max_length": engine.max_len(),
        "load_times": engine.load_times(),
        "hidden_size": c.hidden_size,
        "num_layers": c.num_layers,
        "mask_token": engine.tokenizer.mask_token,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::registry::TASKS;

    /// The fields a request takes, from serde's refusal of an unknown one.
    fn fields<T: DeserializeOwned>() -> Vec<String> {
        let Err(err) = parse::<T>("any", r#"{"?": 0}"#) else {
            panic!("an unknown field was taken");
        };
        let err = err.to_string();
        let expected = err
            .split("expected")
            .nth(1)
            .unwrap_or_else(|| panic!("{err}"));
        (expected.split('`').skip(1).step_by(2))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn every_request_takes_its_inputs_and_the_options_of_the_task_table() {
        const INPUTS: &[&str] = &[
            "texts",
            "inputs",
            "question",
            "context",
            "candidate_labels",
            "query",
            "documents",
        ];
        for t in TASKS {
            let taken = match t.call {
                Call::Classify => fields::<ClassifyRequest>(),
                Call::Tokens => fields::<NerRequest>(),
                Call::Answer => fields::<QaRequest>(),
                Call::Embed => fields::<EmbedRequest>(),
                Call::Rank => fields::<RankRequest>(),
                Call::FillMask => fields::<FillMaskRequest>(),
                Call::Score => fields::<ScoreRequest>(),
                Call::NextSentence => fields::<NextSentenceRequest>(),
                Call::ZeroShot => fields::<ZeroShotRequest>(),
            };
            let mut options: Vec<&str> = (taken.iter().map(String::as_str))
                .filter(|f| !INPUTS.contains(f))
                .collect();
            let mut table: Vec<&str> = t.options.iter().map(|o| o.name).collect();
            options.sort();
            table.sort();
            assert_eq!(
                options, table,
                "{}: the request's options and TASKS'",
                t.name
            );
        }
    }

    #[test]
    fn feature_extraction_defaults_are_the_task_tables() {
        let spec = crate::tasks::registry::find("feature-extraction").unwrap();
        let default = |name| {
            let option = spec.options.iter().find(|o| o.name == name).unwrap();
            option.default.unwrap()
        };
        let pooling: EmbedPooling = serde_json::from_str(default("pooling")).unwrap();
        assert_eq!(pooling, EmbedPooling::default());
        let normalize: bool = serde_json::from_str(default("normalize")).unwrap();
        assert_eq!(normalize, bool::default());
    }

    #[test]
    fn utf16_indices_count_surrogate_pairs() {
        let map = super::utf16_indices("a😀e\u{301}b");
        assert_eq!(map, vec![0, 1, 3, 4, 5, 6]);
    }

    #[test]
    fn redact_takes_utf16_offsets_and_rounds_out_of_surrogate_pairs() {
        let text = "😀 Zoë 😀x y";
        // `Zoë` is UTF-16 3..6; `x` is 9..10, its emoji 7..9 (one code point).
        let ents =
            r#"[{"label":"B-GIVEN_NAME","start":3,"end":6},{"label":"X","start":8,"end":9}]"#;
        let got = super::redact(text, ents, r#"{"style":"type"}"#).unwrap();
        assert_eq!(got, "😀 [GIVEN_NAME] [X] y");
        let err = super::redact(text, r#"[{"label":"X","start":3,"end":40}]"#, "{}").unwrap_err();
        assert!(err.to_string().contains("outside the text"), "{err}");
        let err = super::redact(text, "[]", r#"{"style":"blur"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown value `blur`"), "{err}");
    }
}
