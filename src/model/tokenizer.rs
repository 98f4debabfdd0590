//! The checkpoint's own `tokenizer.json`, with special token ids read from it (never assumed),
//! and windowing of long inputs with a stride, exactly as the HF fast tokenizers do it.

use crate::error::{Error, Result};
use serde_json::Value;
use std::sync::Mutex;
use tokenizers::utils::truncation::{TruncationDirection, TruncationParams, TruncationStrategy};
use tokenizers::{Encoding, Tokenizer};

pub struct TextTokenizer {
    inner: Mutex<Tokenizer>,
    pub cls_id: Option<u32>,
    pub pad_id: u32,
    pub mask_id: Option<u32>,
    pub mask_token: Option<String>,
    pub unk_id: Option<u32>,
    /// `tokenizer_config.json`'s `model_max_length`, when it is a real limit.
    pub model_max_length: Option<usize>,
    /// WordPiece's `##`: tells sub-words from words when aggregating entities.
    pub subword_prefix: Option<String>,
    /// Special tokens added around one text (`[0]`) and a pair (`[1]`), probed once at load.
    added: [usize; 2],
}

/// Counts the special tokens the post-processor adds, by encoding a probe with and without them.
fn probe_added_tokens(tok: &Tokenizer, pair: bool) -> usize {
    let probe = if pair {
        tok.encode(("a", "a"), true)
    } else {
        tok.encode("a", true)
    };
    let plain = tok.encode("a", false).map(|e| e.len()).unwrap_or(0);
    probe
        .map(|e| e.len().saturating_sub(plain * if pair { 2 } else { 1 }))
        .unwrap_or(0)
}

/// What is read of `tokenizer.json` beside `tokenizers`' own parse. The rest of the file (the
/// vocabulary, merges) is checked as JSON and skipped, not built into maps.
#[derive(serde::Deserialize)]
struct FileHead {
    #[serde(default)]
    post_processor: Value,
    #[serde(default)]
    model: ModelHead,
}

#[derive(Default, serde::Deserialize)]
struct ModelHead {
    #[serde(default)]
    continuing_subword_prefix: Option<Value>,
}

/// `tokenizers` reads a `TemplateProcessing` without the checks its builder makes, then indexes
/// its special tokens by the template's ids and takes `$B` as the second text: refuse the
/// templates where encoding would panic (a special token the template names but the processor
/// lacks, `$B` in the single-text template, a token whose ids and strings differ in number).
fn check_post_processor(p: &Value) -> std::result::Result<(), String> {
    // By structure, not by `type`: `tokenizers` picks the processor by the fields it finds.
    if let Some(list) = p.get("processors").and_then(Value::as_array) {
        list.iter().try_for_each(check_post_processor)?;
    }
    if p.get("single").is_none() && p.get("pair").is_none() {
        return Ok(());
    }
    let specials = p.get("special_tokens").and_then(Value::as_object);
    for (name, token) in specials.into_iter().flatten() {
        let len = |k: &str| token.get(k).and_then(Value::as_array).map(Vec::len);
        if len("ids") != len("tokens") {
            return Err(format!(
                "special token `{name}` has {:?} ids for {:?} tokens",
                len("ids"),
                len("tokens")
            ));
        }
    }
    for (template, pair) in [("single", false), ("pair", true)] {
        let pieces = p.get(template).and_then(Value::as_array);
        for piece in pieces.into_iter().flatten() {
            if let Some(id) = piece.pointer("/SpecialToken/id").and_then(Value::as_str) {
                if !specials.is_some_and(|s| s.contains_key(id)) {
                    return Err(format!(
                        "the {template} template names special token `{id}`, which the post-processor lacks"
                    ));
                }
            }
            let seq = piece.pointer("/Sequence/id").and_then(Value::as_str);
            if !pair && seq == Some("B") {
                return Err("the single-text template takes a second text ($B)".into());
            }
        }
    }
    Ok(())
}

/// How to split an input that is longer than one window.
#[derive(Debug, Clone, Copy)]
pub struct Windowing {
    pub max_len: usize,
    pub stride: usize,
    /// Truncate only the second text of a pair (question answering's context).
    pub only_second: bool,
}

impl TextTokenizer {
    pub fn from_json(tokenizer_json: &[u8], tokenizer_config: Option<&str>) -> Result<Self> {
        // Checked as JSON first: `tokenizers` panics (an `expect`) on a decoder that is not
        // valid JSON, where the rest of the file gets an error.
        let head: FileHead =
            serde_json::from_slice(tokenizer_json).map_err(|e| match e.is_data() {
                true => Error::Tokenizer(format!("tokenizer.json: {e}")),
                false => Error::Tokenizer(format!("tokenizer.json is not valid JSON: {e}")),
            })?;
        check_post_processor(&head.post_processor)
            .map_err(|e| Error::Tokenizer(format!("tokenizer.json: {e}")))?;
        let mut tok = match super::tokenizer_json::read(tokenizer_json) {
            Some(tok) => tok,
            None => Tokenizer::from_bytes(tokenizer_json)
                .map_err(|e| Error::Tokenizer(format!("tokenizer.json: {e}")))?,
        };
        tok.with_padding(None);
        tok.with_truncation(None)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        let cfg: Value = tokenizer_config
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or(Value::Null);
        let special = |key: &str, fallbacks: &[&str]| -> Option<(String, u32)> {
            let named = cfg
                .get(key)
                .and_then(|v| v.as_str().or_else(|| v.get("content")?.as_str()));
            named
                .into_iter()
                .chain(fallbacks.iter().copied())
                .find_map(|t| tok.token_to_id(t).map(|id| (t.to_string(), id)))
        };
        let mask = special("mask_token", &["[MASK]", "<mask>"]);
        let model_max_length = cfg
            .get("model_max_length")
            .and_then(Value::as_f64)
            .filter(|&m| m > 0.0 && m < 1e9)
            .map(|m| m as usize);
        let subword_prefix =
            (head.model.continuing_subword_prefix).and_then(|p| p.as_str().map(String::from));
        Ok(TextTokenizer {
            cls_id: special("cls_token", &["[CLS]", "<s>"]).map(|s| s.1),
            pad_id: special("pad_token", &["[PAD]", "<pad>"]).map_or(0, |s| s.1),
            mask_id: mask.as_ref().map(|m| m.1),
            mask_token: mask.map(|m| m.0),
            unk_id: special("unk_token", &["[UNK]", "<unk>"]).map(|s| s.1),
            model_max_length,
            subword_prefix,
            added: [
                probe_added_tokens(&tok, false),
                probe_added_tokens(&tok, true),
            ],
            inner: Mutex::new(tok),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tokenizer> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Special tokens the post-processor adds around one text or a pair.
    pub fn added_tokens(&self, pair: bool) -> usize {
        self.added[pair as usize]
    }

    /// One encoding with special tokens and code-point offsets, no truncation.
    pub fn encode(&self, text: &str, pair: Option<&str>) -> Result<Encoding> {
        let tok = self.lock();
        let r = match pair {
            Some(p) => tok.encode_char_offsets((text, p), true),
            None => tok.encode_char_offsets(text, true),
        };
        r.map_err(|e| Error::Tokenizer(e.to_string()))
    }

    /// A (text, pair) encoding of at most `max_len` tokens that shortens only the text, as HF's
    /// `truncation="only_first"` (the zero-shot pipeline's premise). When the pair and the
    /// special tokens leave the text no token, HF's pipeline falls back to no truncation and
    /// the model then fails on the over-long input; this says so instead.
    pub fn encode_only_first(&self, text: &str, pair: &str, max_len: usize) -> Result<Encoding> {
        let enc = self.encode(text, Some(pair))?;
        if enc.len() <= max_len {
            return Ok(enc);
        }
        let first = enc
            .get_sequence_ids()
            .iter()
            .filter(|s| **s == Some(0))
            .count();
        let over = enc.len() - max_len;
        if first <= over {
            return Err(Error::Input(format!(
                "the pair is {} tokens and the model takes {max_len}: cutting only the first text ({first} tokens) cannot make it fit, the second is {} tokens with the special tokens",
                enc.len(),
                enc.len() - first
            )));
        }
        let mut tok = self.lock();
        let params = TruncationParams {
            direction: TruncationDirection::Right,
            max_length: max_len,
            strategy: TruncationStrategy::OnlyFirst,
            stride: 0,
        };
        tok.with_truncation(Some(params))
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        let r = tok.encode_char_offsets((text, pair), true);
        tok.with_truncation(None)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        let mut enc = r.map_err(|e| Error::Tokenizer(e.to_string()))?;
        enc.take_overflowing();
        Ok(enc)
    }

    /// Every window of the input: the first encoding and its overflows, in order.
    pub fn encode_windows(
        &self,
        text: &str,
        pair: Option<&str>,
        w: Windowing,
    ) -> Result<Vec<Encoding>> {
        let added = self.added_tokens(pair.is_some());
        let fixed = if w.only_second {
            self.lock()
                .encode(text, false)
                .map_err(|e| Error::Tokenizer(e.to_string()))?
                .len()
        } else {
            0
        };
        let room = w.max_len.saturating_sub(added + fixed);
        if room <= w.stride {
            return Err(Error::Input(format!(
                "a window of {} tokens leaves {room} tokens for the text after {added} special tokens{}, which must exceed the stride of {}",
                w.max_len,
                if fixed > 0 { format!(" and a {fixed}-token question") } else { String::new() },
                w.stride
            )));
        }
        let mut tok = self.lock();
        let strategy = if w.only_second {
            TruncationStrategy::OnlySecond
        } else {
            TruncationStrategy::LongestFirst
        };
        let params = TruncationParams {
            direction: TruncationDirection::Right,
            max_length: w.max_len,
            strategy,
            stride: w.stride,
        };
        tok.with_truncation(Some(params))
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        let r = match pair {
            Some(p) => tok.encode_char_offsets((text, p), true),
            None => tok.encode_char_offsets(text, true),
        };
        tok.with_truncation(None)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        let mut first = r.map_err(|e| Error::Tokenizer(e.to_string()))?;
        let rest = first.take_overflowing();
        let mut out = vec![first];
        out.extend(rest);
        Ok(out)
    }

    pub fn id_to_token(&self, id: u32) -> String {
        self.lock().id_to_token(id).unwrap_or_default()
    }

    pub fn decode(&self, ids: &[u32], skip_special: bool) -> String {
        self.lock().decode(ids, skip_special).unwrap_or_default()
    }

    /// Joins tokens the way the tokenizer's decoder does (`##` pieces glued, spaces cleaned up).
    pub fn tokens_to_string(&self, tokens: &[String]) -> String {
        let tok = self.lock();
        match tok.get_decoder() {
            Some(d) => {
                use tokenizers::Decoder;
                d.decode(tokens.to_vec())
                    .unwrap_or_else(|_| tokens.join(" "))
            }
            None => tokens.join(" "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `tokenizer` fuzz target: a control character inside the decoder made
    /// `tokenizers` panic; it is an error here.
    #[test]
    fn a_decoder_that_is_not_json_is_an_error() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/tiny/bert-gelu-tanh-f16/tokenizer.json"
        );
        let good = std::fs::read_to_string(path).unwrap();
        assert!(TextTokenizer::from_json(good.as_bytes(), None).is_ok());
        let at = good.find("\"decoder\"").unwrap();
        let ty = at + good[at..].find("\"WordPiece\"").unwrap();
        let mut bad = good.into_bytes();
        bad[ty + 4] = 0x01;
        let e = TextTokenizer::from_json(&bad, None)
            .err()
            .expect("an error");
        assert!(e.to_string().contains("is not valid JSON"), "{e}");
        let regression = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fuzz/regressions/tokenizer/decoder-not-json"
        );
        let e = TextTokenizer::from_json(&std::fs::read(regression).unwrap(), None);
        assert!(e.is_err());
    }

    /// Found by the `tokenizer` fuzz target: a template naming a special token the processor
    /// lacks made `tokenizers` panic when encoding.
    #[test]
    fn a_template_with_unknown_special_tokens_is_an_error() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/tiny/bert-gelu-tanh-f16/tokenizer.json"
        );
        let good: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let edit = |f: &dyn Fn(&mut Value)| {
            let mut v = good.clone();
            f(&mut v);
            TextTokenizer::from_json(v.to_string().as_bytes(), None).map(|_| ())
        };
        assert_eq!(good["post_processor"]["type"], "TemplateProcessing");
        assert!(edit(&|_| {}).is_ok());
        let e = edit(&|v| v["post_processor"]["pair"][2]["SpecialToken"]["id"] = "|/s>".into());
        assert!(e.unwrap_err().to_string().contains("special token `|/s>`"));
        let template = serde_json::json!({
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[X]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"[X]": {"id": "[X]", "ids": [1, 2], "tokens": ["[X]"]}}
        });
        let e = edit(&|v| v["post_processor"] = template.clone()).unwrap_err();
        assert!(
            e.to_string().contains("has Some(2) ids for Some(1) tokens"),
            "{e}"
        );
        let mut fixed = template.clone();
        fixed["special_tokens"]["[X]"]["ids"] = serde_json::json!([1]);
        let e = edit(&|v| v["post_processor"] = fixed.clone()).unwrap_err();
        assert!(e.to_string().contains("second text ($B)"), "{e}");
        let nested = serde_json::json!({"type": "Sequence", "processors": [fixed.clone()]});
        assert!(edit(&|v| v["post_processor"] = nested.clone()).is_err());
        // `tokenizers` does not check the `type` tag: neither may the check.
        let e = edit(&|v| {
            v["post_processor"]["type"] = "TemplateercPossing".into();
            v["post_processor"]["single"][2]["SpecialToken"]["id"] = "[[EP]".into();
        });
        assert!(e.unwrap_err().to_string().contains("special token `[[EP]`"));
        let regression = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fuzz/regressions/tokenizer/template-unknown-special-token"
        );
        assert!(TextTokenizer::from_json(&std::fs::read(regression).unwrap(), None).is_err());
        let regression = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fuzz/regressions/tokenizer/template-of-another-type"
        );
        assert!(TextTokenizer::from_json(&std::fs::read(regression).unwrap(), None).is_err());
    }
}
