//! `tokenizer.json` into a `tokenizers::Tokenizer` as `Tokenizer::from_bytes` builds it, but with
//! the model (the vocabulary, merges) read straight into its own type. `tokenizers` reads a
//! model through an untagged enum: the whole vocabulary buffered, then built as a JSON value,
//! then converted, three passes that were most of a tokenizer's load. Every other part goes
//! through the deserializer `tokenizers` uses, in the order its visitor applies them.

use serde::Deserialize;
use serde_json::value::RawValue;
use tokenizers::models::{bpe::BPE, unigram::Unigram, wordlevel::WordLevel, wordpiece::WordPiece};
use tokenizers::{
    AddedToken, DecoderWrapper, ModelWrapper, NormalizerWrapper, PaddingParams,
    PostProcessorWrapper, PreTokenizerWrapper, Tokenizer, TokenizerBuilder, TruncationParams,
};

#[derive(Deserialize)]
struct File<'a> {
    version: Option<String>,
    #[serde(default)]
    truncation: Option<TruncationParams>,
    #[serde(default)]
    padding: Option<PaddingParams>,
    #[serde(default)]
    added_tokens: Vec<AddedTokenWithId>,
    #[serde(default)]
    normalizer: Option<NormalizerWrapper>,
    #[serde(default)]
    pre_tokenizer: Option<PreTokenizerWrapper>,
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(default)]
    decoder: Option<DecoderWrapper>,
    #[serde(default)]
    post_processor: Option<PostProcessorWrapper>,
}

#[derive(Deserialize)]
struct AddedTokenWithId {
    /// Required as `tokenizers` requires it; the id is the vocabulary's or the next free one.
    #[serde(rename = "id")]
    _id: u32,
    #[serde(flatten)]
    token: AddedToken,
}

#[derive(Deserialize)]
struct ModelKind {
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// The tokenizer, or `None` where this reading does not apply (a model without a `type`, a
/// file whose keys repeat, a string with escapes where `tokenizers` borrows one): then
/// `Tokenizer::from_bytes` reads it, with its own errors.
pub fn read(json: &[u8]) -> Option<Tokenizer> {
    let file: File = serde_json::from_slice(json).ok()?;
    let raw = file.model?.get();
    let kind: ModelKind = serde_json::from_str(raw).ok()?;
    let model = match kind.kind?.as_str() {
        "WordPiece" => ModelWrapper::WordPiece(serde_json::from_str::<WordPiece>(raw).ok()?),
        "BPE" => ModelWrapper::BPE(serde_json::from_str::<BPE>(raw).ok()?),
        "Unigram" => ModelWrapper::Unigram(serde_json::from_str::<Unigram>(raw).ok()?),
        "WordLevel" => ModelWrapper::WordLevel(serde_json::from_str::<WordLevel>(raw).ok()?),
        _ => return None,
    };
    if file.version.as_deref().is_some_and(|v| v != "1.0") {
        return None;
    }
    let builder = TokenizerBuilder::new()
        .with_truncation(file.truncation)
        .with_padding(file.padding)
        .with_normalizer(file.normalizer)
        .with_pre_tokenizer(file.pre_tokenizer)
        .with_model(model)
        .with_decoder(file.decoder)
        .with_post_processor(file.post_processor);
    let mut tokenizer = Tokenizer::from(builder.build().ok()?);
    let added: Vec<AddedToken> = file.added_tokens.into_iter().map(|t| t.token).collect();
    tokenizer.add_tokens(&added);
    Some(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXTS: &[&str] = &[
        "Hello, World! Jean-Pierre's e-mail: jp@example.com, +33 6 12 34 56 78.",
        "  leading spaces, tabs\tand\nnew lines  ",
        "Ünïcödé, 東京タワー, emoji 🙂👍🏽, and a [MASK] <mask> [SEP] <s></s> token",
        "supercalifragilisticexpialidocious antidisestablishmentarianism",
        "",
    ];

    /// Every tokenizer the tests carry, read both ways: the same vocabulary, added tokens,
    /// encodings and decodings.
    #[test]
    fn models_read_as_their_own_type_tokenize_as_tokenizers_reads_them() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<_> = ["tests/tiny", "models"]
            .iter()
            .filter_map(|d| std::fs::read_dir(root.join(d)).ok())
            .flatten()
            .map(|e| e.unwrap().path().join("tokenizer.json"))
            .filter(|p| p.exists())
            .collect();
        files.sort();
        let mut kinds = std::collections::BTreeSet::new();
        for path in &files {
            let json = std::fs::read(path).unwrap();
            let want = Tokenizer::from_bytes(&json).unwrap();
            let got = read(&json).unwrap_or_else(|| panic!("{} not read", path.display()));
            let at = path.display();
            kinds.insert(format!("{:?}", std::mem::discriminant(got.get_model())));
            assert_eq!(got.get_vocab(true), want.get_vocab(true), "{at}");
            assert_eq!(
                got.get_added_tokens_decoder(),
                want.get_added_tokens_decoder(),
                "{at}"
            );
            for text in TEXTS {
                for pair in [None, Some("and a second text")] {
                    let enc = |t: &Tokenizer| match pair {
                        Some(p) => t.encode_char_offsets((*text, p), true).unwrap(),
                        None => t.encode_char_offsets(*text, true).unwrap(),
                    };
                    let (a, b) = (enc(&got), enc(&want));
                    assert_eq!(a.get_ids(), b.get_ids(), "{at}: {text}");
                    assert_eq!(a.get_tokens(), b.get_tokens(), "{at}: {text}");
                    assert_eq!(a.get_offsets(), b.get_offsets(), "{at}: {text}");
                    assert_eq!(a.get_type_ids(), b.get_type_ids(), "{at}: {text}");
                    assert_eq!(
                        a.get_special_tokens_mask(),
                        b.get_special_tokens_mask(),
                        "{at}: {text}"
                    );
                    let decode = |t: &Tokenizer| t.decode(a.get_ids(), false).unwrap();
                    assert_eq!(decode(&got), decode(&want), "{at}: {text}");
                }
            }
        }
        assert!(files.len() >= 40, "{} tokenizers", files.len());
        assert!(kinds.len() >= 3, "model kinds {kinds:?}");
    }

    #[test]
    fn files_this_reading_does_not_take_are_left_to_tokenizers() {
        let model = r#""model": {"vocab": {"[UNK]": 0, "a": 1}, "unk_token": "[UNK]"}"#;
        let untyped = format!(r#"{{"version": "1.0", "added_tokens": [], {model}}}"#);
        assert!(read(untyped.as_bytes()).is_none());
        assert!(Tokenizer::from_bytes(untyped.as_bytes()).is_ok());
        let typed = untyped.replace(r#"{"vocab""#, r#"{"type": "WordLevel", "vocab""#);
        assert!(read(typed.as_bytes()).is_some());
        let repeated = typed.replace(
            r#""version": "1.0","#,
            r#""version": "1.0", "version": "1.0","#,
        );
        assert!(read(repeated.as_bytes()).is_none());
        let other_version = typed.replace("1.0", "2.0");
        assert!(read(other_version.as_bytes()).is_none());
        assert!(Tokenizer::from_bytes(other_version.as_bytes()).is_err());
    }
}
