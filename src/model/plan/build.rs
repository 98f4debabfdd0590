//! The forward pass as ops: embeddings, then each encoder layer as its family's table entry
//! says, then the checkpoint's heads.

use super::builder::Builder;
use super::heads::{build_head, HeadBuilder};
use super::{BufId, Head, Op, Plan, Rows};
use crate::error::Result;
use crate::model::activation::Activation;
use crate::model::config::ModelConfig;
use crate::model::family::{layer_names, FfnGate, NormPlacement};
use crate::model::weights::{Tensor, Weights};
use std::collections::HashMap;

impl Plan {
    /// The graph and its weights, indexed by [`WeightId`].
    pub fn build(cfg: ModelConfig, weights: Weights) -> Result<(Plan, Vec<Tensor>)> {
        let mut b = Builder {
            cfg: &cfg,
            src: weights,
            weights: Vec::new(),
            names: Vec::new(),
            taken: HashMap::new(),
            buffers: Vec::new(),
            ops: Vec::new(),
            layer: None,
        };
        let fam = cfg.family();
        let names = &fam.embeddings;
        let (h, e) = (cfg.hidden_size, cfg.embedding_size);
        let hidden = b.buffer("hidden", Rows::Tokens, h);
        let hidden_mid = b.buffer("hidden_mid", Rows::Tokens, h);
        let qkv = b.buffer("qkv", Rows::Tokens, 3 * h);
        let ctx = b.buffer("context", Rows::Tokens, h);
        let inter = b.buffer("intermediate", Rows::Tokens, cfg.intermediate_size);
        let gated = (cfg.gate_act.is_some())
            .then(|| b.buffer("gate_up", Rows::Tokens, 2 * cfg.intermediate_size));

        let word = b.weight(&format!("{}.weight", names.word), &[cfg.vocab_size, e])?;
        let position = match cfg.position_table {
            true => Some(b.weight(
                &format!("{}.weight", names.position),
                &[cfg.max_position_embeddings, e],
            )?),
            false => None,
        };
        let token_type = if cfg.type_vocab_size > 0 {
            Some(b.weight(
                &format!("{}.weight", names.token_type),
                &[cfg.type_vocab_size, e],
            )?)
        } else {
            None
        };
        // ALBERT projects even where the widths agree; ELECTRA only where they differ.
        let project = e != h
            || b.src
                .contains(b.prefix(), &format!("{}.weight", names.project));
        // DeBERTa projects (without a bias) before the LayerNorm, the others after it.
        let before = project && names.project_before_norm;
        let norm = match names.norm {
            Some(name) => Some(b.norm(name, if before { h } else { e })?),
            None => None,
        };
        let embed_out = if project {
            b.buffer("embeddings", Rows::Tokens, e)
        } else {
            hidden
        };
        b.ops.push(Op::Embeddings {
            word,
            position,
            token_type,
            norm: norm.filter(|_| !before),
            position_offset: cfg.position_offset,
            out: embed_out,
        });
        if project {
            let proj = b.linear_with(names.project, e, h, !before)?;
            b.ops.push(Op::Linear {
                x: embed_out,
                linear: proj,
                act: Activation::None,
                residual: None,
                norm: norm.filter(|_| before),
                out: hidden,
            });
        }
        let bias = b.distance_table()?;
        let relative_embeddings = b.relative_embeddings()?;
        let rotations = b.rotations(qkv)?;
        let pre_norm = match fam.norms {
            NormPlacement::Pre {
                first_attn_norm, ..
            } => Some((b.buffer("normed", Rows::Tokens, h), first_attn_norm)),
            NormPlacement::Post => None,
        };
        // A sub-block's input, LayerNormed first in a pre-norm family.
        let normed_input = |b: &mut Builder, x: BufId, name: &str, skip: bool| -> Result<BufId> {
            let Some((normed, _)) = pre_norm.filter(|_| !skip) else {
                return Ok(x);
            };
            let norm = b.norm(name, h)?;
            b.ops.push(Op::Norm {
                x,
                norm,
                out: normed,
            });
            Ok(normed)
        };

        for i in 0..cfg.num_layers {
            b.layer = Some(i);
            let n = layer_names(cfg.model_type, i);
            let t = &fam.layer;
            let skip_first = i == 0 && pre_norm.is_some_and(|(_, first)| !first);
            let attn_in = normed_input(&mut b, hidden, &n.attn_norm, skip_first)?;
            let qkv_w = b.qkv(i, h)?;
            b.op_linear(attn_in, qkv_w, Activation::None, qkv);
            let window = cfg.window(i);
            if let Some(r) = rotations
                .get(window.is_some() as usize)
                .or(rotations.first())
            {
                b.ops.push(r.clone());
            }
            let relative = match &relative_embeddings {
                Some(rel) => Some(b.disentangled(rel, qkv_w, i)?),
                None => None,
            };
            // DeBERTa divides every term by sqrt(d · (1 + its relative terms)).
            let terms = cfg
                .disentangled
                .map_or(0, |d| d.c2p as usize + d.p2c as usize);
            let scale = 1.0 / ((cfg.head_dim() * (1 + terms)) as f32).sqrt();
            b.ops.push(Op::Attention {
                qkv,
                out: ctx,
                heads: cfg.num_heads,
                head_dim: cfg.head_dim(),
                scale,
                bias,
                relative,
                window,
            });
            let attn_out = b.layer_linear(t.attn_out, i, h, h)?;
            let post_norm = match pre_norm {
                None => Some(b.norm(&n.attn_norm, h)?),
                Some(_) => None,
            };
            b.ops.push(Op::Linear {
                x: ctx,
                linear: attn_out,
                act: Activation::None,
                residual: Some(hidden),
                norm: post_norm,
                out: hidden_mid,
            });
            let mlp_in = normed_input(&mut b, hidden_mid, &n.ffn_norm, false)?;
            let i_size = cfg.intermediate_size;
            match (gated, cfg.gate_act) {
                (Some(gate_up), Some(act)) => {
                    let ffn_in = match t.ffn_gate {
                        FfnGate::Module(gate) => b.stacked(&[gate, t.ffn_in], i, h, i_size)?,
                        FfnGate::First => b.layer_linear(t.ffn_in, i, h, 2 * i_size)?,
                        FfnGate::Second => {
                            let l = b.layer_linear(t.ffn_in, i, h, 2 * i_size)?;
                            b.swap_halves(l)?
                        }
                    };
                    b.op_linear(mlp_in, ffn_in, Activation::None, gate_up);
                    b.ops.push(Op::Gate {
                        x: gate_up,
                        out: inter,
                        act,
                    });
                }
                _ => {
                    let ffn_in = b.layer_linear(t.ffn_in, i, h, i_size)?;
                    b.op_linear(mlp_in, ffn_in, cfg.hidden_act, inter);
                }
            }
            let ffn_out = b.layer_linear(t.ffn_out, i, i_size, h)?;
            let post_norm = match pre_norm {
                None => Some(b.norm(&n.ffn_norm, h)?),
                Some(_) => None,
            };
            b.ops.push(Op::Linear {
                x: inter,
                linear: ffn_out,
                act: Activation::None,
                residual: Some(hidden_mid),
                norm: post_norm,
                out: hidden,
            });
        }
        if let NormPlacement::Pre { final_norm, .. } = fam.norms {
            b.layer = None;
            let norm = b.norm(final_norm, h)?;
            b.ops.push(Op::Norm {
                x: hidden,
                norm,
                out: hidden,
            });
        }
        b.layer = None;
        let encoder_ops = b.ops.len();
        let mut heads = Vec::new();
        for &kind in cfg.architecture.heads() {
            let start = b.ops.len();
            let logits = build_head(
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
