//! The forward pass, written once: an ordered list of fused ops over named activation buffers.
//! The CPU and GPU executors both run exactly this list.

use super::config::{Activation, HeadKind, ModelConfig, ModelType};
use super::weights::{Quant, Tensor, Weights};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WeightId(pub usize);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufId(pub usize);

/// How many rows a buffer has for a batch of `b` sequences of `l` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// One row per token: `b * l`.
    Tokens,
    /// The first token of each sequence: `b`.
    First,
    /// Token rows chosen per call (mask positions for fill-mask).
    Picked,
}

#[derive(Debug, Clone)]
pub struct BufferSpec {
    pub name: &'static str,
    pub rows: Rows,
    pub cols: usize,
}

#[derive(Debug, Clone, Copy)]
pub struct Linear {
    /// PyTorch layout `[out, in]`.
    pub weight: WeightId,
    pub bias: Option<WeightId>,
    pub n_in: usize,
    pub n_out: usize,
}

#[derive(Debug, Clone, Copy)]
pub struct Norm {
    pub gamma: WeightId,
    pub beta: WeightId,
    pub eps: f32,
}

#[derive(Debug, Clone)]
pub enum Op {
    /// `out = LN(word[id] + position[offset + i] + token_type[t])`.
    Embeddings {
        word: WeightId,
        position: WeightId,
        token_type: Option<WeightId>,
        norm: Norm,
        position_offset: usize,
        out: BufId,
    },
    /// `out = LN(act(x · Wᵀ + b) + residual)`, each part optional.
    Linear {
        x: BufId,
        linear: Linear,
        act: Activation,
        residual: Option<BufId>,
        norm: Option<Norm>,
        out: BufId,
    },
    /// Multi-head self-attention over a fused `[q | k | v]` buffer, padding keys masked.
    Attention {
        qkv: BufId,
        out: BufId,
        heads: usize,
        head_dim: usize,
    },
    /// Copies the rows named by `out`'s row kind (`First` or `Picked`) out of a token buffer.
    Gather { x: BufId, out: BufId },
}

/// The op graph: immutable once built, shared by the engine and both executors, each of which
/// owns the weights in its own form (packed for a CPU kernel, uploaded to a GPU).
#[derive(Debug)]
pub struct Plan {
    pub config: ModelConfig,
    /// Names of the weights, indexed by [`WeightId`] (error messages, GPU labels).
    pub weight_names: Vec<String>,
    pub buffers: Vec<BufferSpec>,
    pub ops: Vec<Op>,
    /// `ops[..encoder_ops]` produce the last hidden state; the rest are the task heads.
    pub encoder_ops: usize,
    pub hidden: BufId,
    /// The checkpoint's heads, each over the hidden state (most have one; `BertForPreTraining`
    /// has the masked LM, then next-sentence prediction).
    pub heads: Vec<Head>,
}

/// One task head: `ops` (a range after the encoder's) read the hidden state and write `logits`.
#[derive(Debug, Clone)]
pub struct Head {
    pub kind: HeadKind,
    pub ops: std::ops::Range<usize>,
    pub logits: BufId,
}

impl Plan {
    pub fn head(&self, i: usize) -> Option<&Head> {
        self.heads.get(i)
    }

    /// The index of the head of `kind`, when the checkpoint has one.
    pub fn head_of(&self, kind: HeadKind) -> Option<usize> {
        self.heads.iter().position(|h| h.kind == kind)
    }

    pub fn logits_rows(&self, head: usize) -> Option<Rows> {
        self.head(head).map(|h| self.buffers[h.logits.0].rows)
    }

    pub fn logits_cols(&self, head: usize) -> usize {
        self.head(head).map_or(0, |h| self.buffers[h.logits.0].cols)
    }
}

struct Builder<'a> {
    cfg: &'a ModelConfig,
    src: Weights,
    weights: Vec<Tensor>,
    names: Vec<String>,
    buffers: Vec<BufferSpec>,
    ops: Vec<Op>,
}

impl Builder<'_> {
    fn prefix(&self) -> &'static str {
        self.cfg.model_type.prefix()
    }

    fn push(&mut self, name: &str, t: Tensor) -> WeightId {
        self.weights.push(t);
        self.names.push(name.to_string());
        WeightId(self.weights.len() - 1)
    }

    fn weight(&mut self, name: &str, shape: &[usize]) -> Result<WeightId> {
        let t = self.src.take(self.prefix(), name, shape)?;
        Ok(self.push(name, t))
    }

    fn buffer(&mut self, name: &'static str, rows: Rows, cols: usize) -> BufId {
        self.buffers.push(BufferSpec { name, rows, cols });
        BufId(self.buffers.len() - 1)
    }

    fn linear(&mut self, name: &str, n_in: usize, n_out: usize) -> Result<Linear> {
        let weight = self.weight(&format!("{name}.weight"), &[n_out, n_in])?;
        let bias = Some(self.weight(&format!("{name}.bias"), &[n_out])?);
        Ok(Linear {
            weight,
            bias,
            n_in,
            n_out,
        })
    }

    fn norm(&mut self, name: &str, n: usize) -> Result<Norm> {
        Ok(Norm {
            gamma: self.weight(&format!("{name}.weight"), &[n])?,
            beta: self.weight(&format!("{name}.bias"), &[n])?,
            eps: self.cfg.layer_norm_eps,
        })
    }

    /// Q, K and V projections fused into one `[3h, h]` matrix so one GEMM produces all three.
    fn fused_qkv(&mut self, names: [String; 3], h: usize) -> Result<Linear> {
        let mut w = Vec::with_capacity(3 * h * h);
        let mut b = Vec::with_capacity(3 * h);
        let mut quants = Vec::new();
        for n in &names {
            let t = self
                .src
                .take(self.prefix(), &format!("{n}.weight"), &[h, h])?;
            w.extend(t.data);
            quants.extend(t.quant);
            b.extend(
                self.src
                    .take(self.prefix(), &format!("{n}.bias"), &[h])?
                    .data,
            );
        }
        let mut fused = Tensor::new(vec![3 * h, h], w);
        if quants.len() == 3 {
            fused.quant = Quant::concat(quants.iter().map(|q| &**q)).map(Box::new);
        }
        let stem = names[0].rsplit_once('.').map_or("", |(s, _)| s).to_string();
        let weight = self.push(&format!("{stem}.qkv.weight"), fused);
        let bias = Some(self.push(&format!("{stem}.qkv.bias"), Tensor::new(vec![3 * h], b)));
        Ok(Linear {
            weight,
            bias,
            n_in: h,
            n_out: 3 * h,
        })
    }

    fn op_linear(&mut self, x: BufId, linear: Linear, act: Activation, out: BufId) {
        self.ops.push(Op::Linear {
            x,
            linear,
            act,
            residual: None,
            norm: None,
            out,
        });
    }
}

/// Tensor names of one encoder layer, per model family (also the ONNX importer's names).
pub(crate) struct LayerNames {
    pub qkv: [String; 3],
    pub attn_out: String,
    pub attn_norm: String,
    pub ffn_in: String,
    pub ffn_out: String,
    pub ffn_norm: String,
}

pub(crate) fn layer_names(t: ModelType, i: usize) -> LayerNames {
    if t == ModelType::DistilBert {
        let p = format!("transformer.layer.{i}");
        LayerNames {
            qkv: ["q_lin", "k_lin", "v_lin"].map(|n| format!("{p}.attention.{n}")),
            attn_out: format!("{p}.attention.out_lin"),
            attn_norm: format!("{p}.sa_layer_norm"),
            ffn_in: format!("{p}.ffn.lin1"),
            ffn_out: format!("{p}.ffn.lin2"),
            ffn_norm: format!("{p}.output_layer_norm"),
        }
    } else {
        let p = format!("encoder.layer.{i}");
        LayerNames {
            qkv: ["query", "key", "value"].map(|n| format!("{p}.attention.self.{n}")),
            attn_out: format!("{p}.attention.output.dense"),
            attn_norm: format!("{p}.attention.output.LayerNorm"),
            ffn_in: format!("{p}.intermediate.dense"),
            ffn_out: format!("{p}.output.dense"),
            ffn_norm: format!("{p}.output.LayerNorm"),
        }
    }
}

impl Plan {
    /// The graph and its weights, indexed by [`WeightId`].
    pub fn build(cfg: ModelConfig, weights: Weights) -> Result<(Plan, Vec<Tensor>)> {
        let mut b = Builder {
            cfg: &cfg,
            src: weights,
            weights: Vec::new(),
            names: Vec::new(),
            buffers: Vec::new(),
            ops: Vec::new(),
        };
        let (h, e) = (cfg.hidden_size, cfg.embedding_size);
        let hidden = b.buffer("hidden", Rows::Tokens, h);
        let hidden_mid = b.buffer("hidden_mid", Rows::Tokens, h);
        let qkv = b.buffer("qkv", Rows::Tokens, 3 * h);
        let ctx = b.buffer("context", Rows::Tokens, h);
        let inter = b.buffer("intermediate", Rows::Tokens, cfg.intermediate_size);

        let word = b.weight("embeddings.word_embeddings.weight", &[cfg.vocab_size, e])?;
        let position = b.weight(
            "embeddings.position_embeddings.weight",
            &[cfg.max_position_embeddings, e],
        )?;
        let token_type = if cfg.type_vocab_size > 0 {
            Some(b.weight(
                "embeddings.token_type_embeddings.weight",
                &[cfg.type_vocab_size, e],
            )?)
        } else {
            None
        };
        let norm = b.norm("embeddings.LayerNorm", e)?;
        let embed_out = if e != h {
            b.buffer("embeddings", Rows::Tokens, e)
        } else {
            hidden
        };
        b.ops.push(Op::Embeddings {
            word,
            position,
            token_type,
            norm,
            position_offset: cfg.position_offset,
            out: embed_out,
        });
        if e != h {
            let proj = b.linear("embeddings_project", e, h)?;
            b.op_linear(embed_out, proj, Activation::None, hidden);
        }

        for i in 0..cfg.num_layers {
            let n = layer_names(cfg.model_type, i);
            let qkv_w = b.fused_qkv(n.qkv, h)?;
            b.op_linear(hidden, qkv_w, Activation::None, qkv);
            b.ops.push(Op::Attention {
                qkv,
                out: ctx,
                heads: cfg.num_heads,
                head_dim: cfg.head_dim(),
            });
            let attn_out = b.linear(&n.attn_out, h, h)?;
            let attn_norm = b.norm(&n.attn_norm, h)?;
            b.ops.push(Op::Linear {
                x: ctx,
                linear: attn_out,
                act: Activation::None,
                residual: Some(hidden),
                norm: Some(attn_norm),
                out: hidden_mid,
            });
            let ffn_in = b.linear(&n.ffn_in, h, cfg.intermediate_size)?;
            b.op_linear(hidden_mid, ffn_in, cfg.hidden_act, inter);
            let ffn_out = b.linear(&n.ffn_out, cfg.intermediate_size, h)?;
            let ffn_norm = b.norm(&n.ffn_norm, h)?;
            b.ops.push(Op::Linear {
                x: inter,
                linear: ffn_out,
                act: Activation::None,
                residual: Some(hidden_mid),
                norm: Some(ffn_norm),
                out: hidden,
            });
        }
        let encoder_ops = b.ops.len();
        let mut heads = Vec::new();
        for &kind in cfg.architecture.heads() {
            let start = b.ops.len();
            let logits = super::heads::build_head(
                &mut HeadBuilder {
                    b: &mut b,
                    hidden,
                    word,
                },
                kind,
            )?;
            heads.push(Head {
                kind,
                ops: start..b.ops.len(),
                logits,
            });
        }
        let Builder {
            weights,
            names,
            buffers,
            ops,
            ..
        } = b;
        let plan = Plan {
            config: cfg,
            weight_names: names,
            buffers,
            ops,
            encoder_ops,
            hidden,
            heads,
        };
        Ok((plan, weights))
    }
}

/// What the task heads (in `heads.rs`) may use of the builder.
pub(super) struct HeadBuilder<'a, 'b> {
    b: &'a mut Builder<'b>,
    pub hidden: BufId,
    /// The word embeddings, which masked-LM decoders tie to.
    pub word: WeightId,
}

impl HeadBuilder<'_, '_> {
    pub fn cfg(&self) -> &ModelConfig {
        self.b.cfg
    }
    pub fn has(&self, name: &str) -> bool {
        self.b.src.contains(self.b.prefix(), name)
    }
    pub fn rows_of(&self, name: &str) -> Option<usize> {
        self.b
            .src
            .find(self.b.prefix(), name)
            .and_then(|(_, t)| t.shape.first().copied())
    }
    pub fn weight(&mut self, name: &str, shape: &[usize]) -> Result<WeightId> {
        self.b.weight(name, shape)
    }
    pub fn linear(&mut self, name: &str, n_in: usize, n_out: usize) -> Result<Linear> {
        self.b.linear(name, n_in, n_out)
    }
    pub fn norm(&mut self, name: &str, n: usize) -> Result<Norm> {
        self.b.norm(name, n)
    }
    pub fn buffer(&mut self, name: &'static str, rows: Rows, cols: usize) -> BufId {
        self.b.buffer(name, rows, cols)
    }
    pub fn push(&mut self, op: Op) {
        self.b.ops.push(op);
    }
    /// Appends `out = act(x · Wᵀ + b)` into a new buffer and returns it.
    pub fn dense(&mut self, x: BufId, l: Linear, act: Activation, name: &'static str) -> BufId {
        let rows = self.b.buffers[x.0].rows;
        let out = self.buffer(name, rows, l.n_out);
        self.b.op_linear(x, l, act, out);
        out
    }
    pub fn missing(&self, what: &str) -> Error {
        Error::MissingTensor(what.to_string())
    }
}
