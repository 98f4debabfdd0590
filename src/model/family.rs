//! The model families as data: one [`Family`] entry per family names its `config.json`
//! spellings and keys, its state-dict names (module templates with `{i}` for the layer index)
//! and what its forward pass does differently. Config parsing, the plan, the task heads, the
//! ONNX importer, the memory estimate and error messages all read this table. Each entry
//! lives in `family/<name>.rs` (BERT's, which the others start from, in `family/bert.rs`);
//! adding a family is one such file and its line in [`FAMILIES`] (plus kernels only for a
//! genuinely new op).

use super::activation::Activation;

mod albert;
mod bert;
mod deberta;
mod distilbert;
mod electra;
mod eurobert;
mod gte;
mod jina;
mod modernbert;
mod mpnet;
mod nomic_bert;
mod roberta;
mod roformer;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelType {
    Bert,
    DistilBert,
    Roberta,
    XlmRoberta,
    Electra,
    Albert,
    MpNet,
    /// DeBERTa (v1): DeBERTa-v2's attention with one head-interleaved `in_proj`.
    Deberta,
    DebertaV2,
    /// Jina embeddings v2: `model_type: bert` with ALiBi and a gated MLP (remote code).
    JinaBert,
    /// RoFormer: BERT with interleaved rotary positions in place of a position table.
    RoFormer,
    /// ModernBERT: pre-norm, rotary, GeGLU, alternating global and sliding-window attention.
    ModernBert,
    /// EuroBERT: Llama's layer (pre-RMSNorm, rotary, SwiGLU, grouped K/V heads) attending both
    /// ways.
    EuroBert,
    /// NomicBERT: post-norm, rotary, SwiGLU, no biases in its layers.
    NomicBert,
    /// GTE (`gte`): NomicBERT's layer with biases, `[up | gate]` in one module.
    Gte,
}

/// Where position ids start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Positions {
    /// `0, 1, 2, …`
    FromZero,
    /// RoBERTa's: after the padding index (`pad_token_id + 1, …`).
    AfterPadding,
    /// After a padding index the family fixes whatever the config says (MPNet's 1).
    AfterIndex(usize),
    /// No position table: positions enter the attention scores only.
    None,
}

/// An additive term of the attention scores that depends on the query-key distance only,
/// turned into one `[heads, distances]` table at load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistanceBias {
    None,
    /// T5-style log buckets of the signed distance into a learned `[rows, heads]` table
    /// (`rows` from `rows_key`; MPNet buckets into 32 whatever the table's size).
    RelativeBuckets {
        table: &'static str,
        rows_key: &'static str,
        buckets: usize,
        max_distance: usize,
    },
    /// `-slope_h · |i - j|` with the ALiBi paper's slopes.
    Alibi,
    /// DeBERTa's disentangled attention: content-to-position and position-to-content
    /// scores against a shared table of relative embeddings (LayerNormed once), projected
    /// by each layer's key and query projections (or its own `pos_*_proj`), indexed by
    /// log-bucketed distances. Its settings come from the config's DeBERTa keys.
    Disentangled {
        embeddings: &'static str,
        norm: &'static str,
        pos_key: &'static str,
        pos_query: &'static str,
    },
}

/// Rotary position embeddings applied to Q and K (and V where `value_key` says so) before
/// the attention scores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rotary {
    /// Pairs `(2i, 2i + 1)` (RoFormer, GPT-J) rather than `(i, i + d/2)` (NeoX, rotate-half).
    pub interleaved: bool,
    pub theta: f64,
    /// Config keys of the base, the first present read (`rope_parameters` as transformers 5
    /// writes it is read before them).
    pub theta_keys: &'static [&'static str],
    /// A config key that, when true, rotates V as well (RoFormer's `rotary_value`).
    pub value_key: Option<&'static str>,
    pub local: Option<LocalAttention>,
    /// Config keys of a dynamic NTK scaling outside `rope_parameters` (NomicBERT's remote code).
    pub dynamic: Option<DynamicKeys>,
}

/// Dynamic NTK scaling set by keys of their own: past `trained` tokens the base grows with the
/// sequence's length; with `factor` set the limit is `extended`'s value, else `trained`'s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DynamicKeys {
    pub factor: &'static str,
    pub trained: &'static str,
    pub extended: &'static str,
}

/// Layers that attend within a sliding window, with a rotary base of their own (ModernBERT):
/// transformers 5's `layer_types` (`sliding_attention`), else every layer whose index is not
/// a multiple of `every_key`'s value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalAttention {
    /// The whole window in tokens; a query sees keys up to half of it away.
    pub window_key: &'static str,
    pub default_window: usize,
    pub every_key: &'static str,
    pub default_every: usize,
    pub theta_key: &'static str,
    pub theta: f64,
}

/// Where each sub-block's LayerNorm sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormPlacement {
    /// `x = LN(x + f(x))` (BERT).
    Post,
    /// `x = x + f(LN(x))`, a last LN after the layers; layer 0's attention norm is absent
    /// where `first_attn_norm` is false (ModernBERT).
    Pre {
        final_norm: &'static str,
        first_attn_norm: bool,
    },
}

/// What the family's norms compute (every norm of a family is of one kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormKind {
    /// `(x - mean) / sqrt(var + eps) · weight + bias`.
    Layer,
    /// `x / sqrt(mean(x²) + eps) · weight`, no bias (T5, Llama, EuroBERT).
    Rms,
}

/// What the sequence head pools (see [`PoolingKey`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadPooling {
    First,
    /// The mean of the real tokens' hidden states.
    Mean,
    /// The head runs on every token and its logits are averaged over the real tokens
    /// (EuroBERT's `late`).
    Late,
}

/// The config key that picks the sequence head's pooling (the first of `keys` present), its
/// values and its default.
#[derive(Debug, Clone, Copy)]
pub struct PoolingKey {
    pub keys: &'static [&'static str],
    pub values: &'static [(&'static str, HeadPooling)],
    pub default: HeadPooling,
}

/// A config key that switches the biases of some modules (templates as in
/// [`LayerTemplates`], or head names) on or off.
#[derive(Debug, Clone, Copy)]
pub struct BiasSwitch {
    pub key: &'static str,
    pub default: bool,
    pub modules: &'static [&'static str],
}

/// The feed-forward block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mlp {
    /// `ffn_out(act(ffn_in(x)))`.
    Plain,
    /// `ffn_in` yields `[gate | up]`: `ffn_out(act(gate) * up)`; the activation comes from
    /// the config key named here (`geglu`, `reglu`).
    Gated { kind_key: &'static str },
    /// `ffn_in` yields `[input | gate]`: `ffn_out(act(input) * gate)` with the config's
    /// hidden activation (ModernBERT's GeGLU).
    GatedHiddenAct,
}

/// Keys of `config.json` for the common sizes; the first key present is read.
#[derive(Debug, Clone, Copy)]
pub struct ConfigKeys {
    pub hidden: &'static [&'static str],
    pub layers: &'static [&'static str],
    pub heads: &'static [&'static str],
    pub intermediate: &'static [&'static str],
    pub act: &'static [&'static str],
    pub default_act: &'static str,
    pub norm_eps: &'static [&'static str],
    pub positions: &'static [&'static str],
}

/// Module names of the embeddings (`.weight` / `.bias` are appended).
#[derive(Debug, Clone, Copy)]
pub struct EmbeddingNames {
    pub word: &'static str,
    pub position: &'static str,
    pub token_type: &'static str,
    /// `None`: the embeddings are not normed (the pre-norm layers norm them).
    pub norm: Option<&'static str>,
    /// The projection from the embedding width up to the hidden width, where they differ.
    pub project: &'static str,
    /// DeBERTa projects the summed embeddings (without a bias) before their LayerNorm;
    /// ELECTRA and ALBERT after it, with one.
    pub project_before_norm: bool,
}

/// Module templates of one encoder layer; `{i}` is the layer index. A template without `{i}`
/// names one module that every layer shares (ALBERT).
#[derive(Debug, Clone, Copy)]
pub struct LayerTemplates {
    pub qkv: [&'static str; 3],
    /// Q, K and V as one `[3h, h]` module, Q rows first (`qkv` is then unused).
    pub fused_qkv: Option<&'static str>,
    /// Q, K and V as one unbiased matrix whose rows run head by head (each head's Q, K, V
    /// rows in turn) with separate Q and V biases (DeBERTa v1); `qkv` is then unused.
    pub interleaved_qkv: Option<InterleavedQkv>,
    pub attn_out: &'static str,
    pub attn_norm: &'static str,
    /// Where a gated MLP's gate is when `ffn_in` does not start with it.
    pub ffn_gate: FfnGate,
    pub ffn_in: &'static str,
    pub ffn_out: &'static str,
    pub ffn_norm: &'static str,
}

/// The gate of a gated MLP (`act(gate) * up`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FfnGate {
    /// `ffn_in` yields `[gate | up]`.
    First,
    /// `ffn_in` yields `[up | gate]` (GTE's `up_gate_proj`).
    Second,
    /// A module of its own; `ffn_in` is the up projection (NomicBERT's `fc12`).
    Module(&'static str),
}

/// Names of an interleaved Q/K/V projection (see [`LayerTemplates::interleaved_qkv`]).
#[derive(Debug, Clone, Copy)]
pub struct InterleavedQkv {
    pub weight: &'static str,
    pub q_bias: &'static str,
    pub v_bias: &'static str,
}

/// Module names of the masked-LM head; `act` is `None` where the config's activation applies.
#[derive(Debug, Clone, Copy)]
pub struct MlmNames {
    pub dense: &'static str,
    pub norm: &'static str,
    pub decoder: &'static str,
    pub bias: &'static str,
    pub act: Option<Activation>,
    /// `false`: no dense and norm, the decoder reads the hidden state (EuroBERT's `lm_head`).
    pub transform: bool,
}

/// The sequence-classification head on the first token: a dense layer, its activation, and
/// the output projection.
#[derive(Debug, Clone, Copy)]
pub struct PooledHead {
    pub dense: &'static str,
    pub act: Activation,
    pub out: &'static str,
}

/// ModernBERT's prediction head: every task head starts with `norm(act(dense(x)))` (the
/// sequence head after its pooling), then its own output projection.
#[derive(Debug, Clone, Copy)]
pub struct HeadTransform {
    pub dense: &'static str,
    pub norm: &'static str,
    /// The output projection of the token, span and sequence heads.
    pub out: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct Family {
    pub model_type: ModelType,
    /// `model_type` spellings in `config.json`; the first is the family's name.
    pub names: &'static [&'static str],
    /// A `config.json` key and value that pick this family over another of the same
    /// `model_type` (Jina's `position_embedding_type: alibi` under `bert`).
    pub selected_by: Option<(&'static str, &'static str)>,
    /// The Hugging Face class prefix (`Bert` of `BertForMaskedLM`).
    pub class: &'static str,
    /// The state-dict prefix of the base model inside task checkpoints.
    pub prefix: &'static str,
    pub keys: ConfigKeys,
    /// Whether the family has token type embeddings, and how many when the config is silent.
    pub token_types: bool,
    pub default_type_vocab_size: usize,
    pub positions: Positions,
    /// A boolean config key that turns the position table off when false (DeBERTa's
    /// `position_biased_input`).
    pub positions_key: Option<&'static str>,
    /// Values of `position_embedding_type` the family's modeling code ignores, besides the one
    /// it runs (ModernBERT's Hub configs say `absolute`, a key its code never reads).
    pub ignored_position_types: &'static [&'static str],
    pub default_norm_eps: f64,
    pub norm_kind: NormKind,
    pub norms: NormPlacement,
    pub embeddings: EmbeddingNames,
    pub layer: LayerTemplates,
    /// Modules of the layer templates that have no bias.
    pub unbiased: &'static [&'static str],
    /// Biases the config switches (ModernBERT's `attention_bias`, `norm_bias`, ...); a norm
    /// without a bias adds zeros.
    pub bias_switches: &'static [BiasSwitch],
    /// Config keys that select a variant webert does not build when true or a non-zero number
    /// (refused at load by name).
    pub unbuilt_flags: &'static [&'static str],
    /// Other state-dict prefixes of the base model in task checkpoints (GTE's remote code
    /// saves `new.`), renamed to `prefix` at load.
    pub other_prefixes: &'static [&'static str],
    pub mlp: Mlp,
    pub distance_bias: DistanceBias,
    pub rotary: Option<Rotary>,
    pub sequence_head: PooledHead,
    /// Older checkpoints' names of the same head, used when `sequence_head`'s output
    /// projection is absent.
    pub sequence_head_legacy: Option<PooledHead>,
    /// Where the config chooses the sequence head's pooling (else the first token).
    pub pooling: Option<PoolingKey>,
    pub head_transform: Option<HeadTransform>,
    /// The config key of the pooled head's activation where the config chooses it.
    pub pooler_act_key: Option<&'static str>,
    pub mlm: MlmNames,
    /// Older checkpoints' names of the same head, used when `mlm`'s are absent.
    pub mlm_legacy: Option<MlmNames>,
    /// BERT's next-sentence head (and so `*ForPreTraining`).
    pub next_sentence: bool,
    /// Published checkpoints are encoders whatever `architectures` says (Jina's configs name
    /// a masked-LM class whose head the weights lack).
    pub encoder_only: bool,
}

/// Every family webert runs.
pub const FAMILIES: &[Family] = &[
    bert::BERT,
    distilbert::DISTILBERT,
    roberta::ROBERTA,
    roberta::XLM_ROBERTA,
    electra::ELECTRA,
    albert::ALBERT,
    mpnet::MPNET,
    deberta::DEBERTA_V2,
    deberta::DEBERTA,
    jina::JINA_BERT,
    roformer::ROFORMER,
    modernbert::MODERNBERT,
    eurobert::EUROBERT,
    nomic_bert::NOMIC_BERT,
    gte::GTE,
];

impl ModelType {
    pub fn family(self) -> &'static Family {
        FAMILIES
            .iter()
            .find(|f| f.model_type == self)
            .expect("every model type has a table entry")
    }

    /// The `model_type` of `config.json` (RoBERTa's own for CamemBERT).
    pub fn name(self) -> &'static str {
        self.family().names[0]
    }

    /// The state-dict prefix the base model carries inside task checkpoints.
    pub fn prefix(self) -> &'static str {
        self.family().prefix
    }
}

/// The family of a `config.json` whose `model_type` is `name`: the entry whose selecting key
/// has its value there, else the one without a selecting key.
pub fn find(name: &str, config_value: impl Fn(&str) -> Option<String>) -> Option<&'static Family> {
    let named = || FAMILIES.iter().filter(|f| f.names.contains(&name));
    named()
        .find(|f| {
            f.selected_by
                .is_some_and(|(k, v)| config_value(k).as_deref() == Some(v))
        })
        .or_else(|| named().find(|f| f.selected_by.is_none()))
}

/// The `model_type` names webert reads, for error messages.
pub fn supported_names() -> String {
    let names = FAMILIES.iter().flat_map(|f| {
        f.names.iter().map(move |n| match f.selected_by {
            None => n.to_string(),
            Some((key, value)) => format!("{n} with {key} `{value}` ({}Model)", f.class),
        })
    });
    names.collect::<Vec<_>>().join(", ")
}

/// Whether `name` is `template` with its `{i}` (if any) filled in by a layer index.
pub fn matches_template(template: &str, name: &str) -> bool {
    match template.split_once("{i}") {
        None => template == name,
        Some((head, tail)) => name
            .strip_prefix(head)
            .and_then(|rest| rest.strip_suffix(tail))
            .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit())),
    }
}

/// A layer template with its index filled in.
pub fn layer_name(template: &str, i: usize) -> String {
    template.replace("{i}", &i.to_string())
}

/// The name of the copy of a shared layer's tensor `name` that layer `i` and those after it
/// read, where a file stores that weight otherwise from layer `i` on (quantized in one layer,
/// f32 in the next); the plan looks for it before the shared name.
pub fn variant_name(name: &str, i: usize) -> String {
    format!("{name}#{i}")
}

/// Tensor names of one encoder layer (also the ONNX importer's names).
pub(crate) struct LayerNames {
    pub qkv: [String; 3],
    pub attn_out: String,
    pub attn_norm: String,
    pub ffn_in: String,
    pub ffn_out: String,
    pub ffn_norm: String,
}

pub(crate) fn layer_names(t: ModelType, i: usize) -> LayerNames {
    let l = &t.family().layer;
    LayerNames {
        qkv: l.qkv.map(|q| layer_name(q, i)),
        attn_out: layer_name(l.attn_out, i),
        attn_norm: layer_name(l.attn_norm, i),
        ffn_in: layer_name(l.ffn_in, i),
        ffn_out: layer_name(l.ffn_out, i),
        ffn_norm: layer_name(l.ffn_norm, i),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_type_has_one_entry_and_names_are_unambiguous() {
        for f in FAMILIES {
            assert_eq!(f.model_type.family().class, f.class);
            let same = FAMILIES.iter().filter(|g| g.model_type == f.model_type);
            assert_eq!(same.count(), 1, "{:?}", f.model_type);
            for name in f.names {
                let plain =
                    (FAMILIES.iter()).filter(|g| g.names.contains(name) && g.selected_by.is_none());
                assert_eq!(plain.count(), 1, "`{name}` picks one family by default");
            }
        }
    }

    #[test]
    fn templates_match_their_layers_only() {
        assert!(matches_template("layers.{i}.attn.Wo", "layers.12.attn.Wo"));
        assert!(!matches_template("layers.{i}.attn.Wo", "layers..attn.Wo"));
        assert!(!matches_template(
            "layers.{i}.attn.Wo",
            "layers.1.attn.Wqkv"
        ));
        assert!(matches_template("final_norm", "final_norm"));
        assert!(!matches_template("final_norm", "final_norm.x"));
    }

    #[test]
    fn a_selecting_key_picks_its_family() {
        let alibi = |k: &str| (k == "position_embedding_type").then(|| "alibi".to_string());
        assert_eq!(find("bert", alibi).unwrap().model_type, ModelType::JinaBert);
        assert_eq!(find("bert", |_| None).unwrap().model_type, ModelType::Bert);
        assert_eq!(
            find("camembert", |_| None).unwrap().model_type,
            ModelType::Roberta
        );
        assert!(find("gpt2", |_| None).is_none());
    }
}
