//! Seeded random weights for a BERT-shaped config: timing models of any size (bert-base,
//! bert-large) without a checkpoint. Not for answers — for benchmarks only.

use super::config::ModelConfig;
use super::weights::{Tensor, Weights};

/// Standard shapes by name: `bert-base`, `bert-large`, `minilm-l6`.
pub fn shape(name: &str) -> Option<(usize, usize, usize, usize)> {
    // (hidden, layers, heads, intermediate)
    match name {
        "bert-base" => Some((768, 12, 12, 3072)),
        "bert-large" => Some((1024, 24, 16, 4096)),
        "minilm-l6" => Some((384, 6, 12, 1536)),
        _ => None,
    }
}

/// Resizes `cfg` to a named shape (base model, no head) and draws weights for it.
pub fn random_model(mut cfg: ModelConfig, name: &str, seed: u64) -> Option<(ModelConfig, Weights)> {
    let (h, layers, heads, inter) = shape(name)?;
    cfg.hidden_size = h;
    cfg.embedding_size = h;
    cfg.num_layers = layers;
    cfg.num_heads = heads;
    cfg.intermediate_size = inter;
    cfg.architecture = super::Architecture::Base;
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut rand = |n: usize, scale: f32| -> Vec<f32> {
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
            })
            .collect()
    };
    let mut w = Weights::default();
    let mut put = |name: String, shape: Vec<usize>, scale: f32| {
        let n = shape.iter().product();
        w.insert(name, Tensor::new(shape, rand(n, scale)));
    };
    put(
        "embeddings.word_embeddings.weight".into(),
        vec![cfg.vocab_size, h],
        0.1,
    );
    put(
        "embeddings.position_embeddings.weight".into(),
        vec![cfg.max_position_embeddings, h],
        0.1,
    );
    put(
        "embeddings.token_type_embeddings.weight".into(),
        vec![cfg.type_vocab_size.max(1), h],
        0.1,
    );
    let ln = |w: &mut dyn FnMut(String, Vec<usize>, f32), p: &str| {
        w(format!("{p}.LayerNorm.weight"), vec![h], 0.1);
        w(format!("{p}.LayerNorm.bias"), vec![h], 0.1);
    };
    ln(&mut put, "embeddings");
    for i in 0..layers {
        let p = format!("encoder.layer.{i}");
        for (name, o, n) in [
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", inter, h),
            ("output.dense", h, inter),
        ] {
            put(format!("{p}.{name}.weight"), vec![o, n], 0.05);
            put(format!("{p}.{name}.bias"), vec![o], 0.05);
        }
        ln(&mut put, &format!("{p}.attention.output"));
        ln(&mut put, &format!("{p}.output"));
    }
    Some((cfg, w))
}

/// Replaces each encoder linear weight of `w` by its symmetric quantization, as the
/// transformers.js exports have them: `q8` per output channel (int8, zero point 0, onnxruntime's
/// reduce_range codes -64..=64), else 4-bit in blocks of 32 (zero point 8); the tensor's values
/// become the dequantized ones.
pub fn quantize(w: &mut Weights, q8: bool) {
    use super::{BlockQuant, ChannelQuant, Quant};
    let names: Vec<String> = (w.names())
        .filter(|n| n.contains("layer") && n.ends_with("weight"))
        .cloned()
        .collect();
    for name in names {
        let Some(t) = w.get_mut(&name) else { continue };
        let &[n, k] = t.shape.as_slice() else {
            continue;
        };
        let quant = if q8 {
            let mut q = ChannelQuant {
                signed: true,
                codes: Vec::with_capacity(n * k),
                scales: Vec::with_capacity(n),
                zero_points: vec![0; n],
            };
            for row in t.data.chunks_exact_mut(k) {
                let s = row.iter().fold(0f32, |m, v| m.max(v.abs())) / 64.0;
                let s = if s > 0.0 { s } else { 1.0 };
                q.scales.push(s);
                for v in row.iter_mut() {
                    let c = (*v / s).round_ties_even().clamp(-64.0, 64.0);
                    q.codes.push(c as i8 as u8);
                    *v = c * s;
                }
            }
            Quant::Channel(q)
        } else {
            let mut q = BlockQuant {
                block: 32,
                codes: Vec::with_capacity(n * k),
                scales: Vec::new(),
                zero_points: Vec::new(),
            };
            for row in t.data.chunks_exact_mut(k) {
                for blk in row.chunks_mut(32) {
                    let s = blk.iter().fold(0f32, |m, v| m.max(v.abs())) / 7.0;
                    q.scales.push(s);
                    q.zero_points.push(8.0);
                    for v in blk.iter_mut() {
                        let c = if s > 0.0 {
                            (*v / s).round().clamp(-8.0, 7.0)
                        } else {
                            0.0
                        };
                        q.codes.push((c + 8.0) as u8);
                        *v = c * s;
                    }
                }
            }
            Quant::Block(q)
        };
        t.quant = Some(Box::new(quant));
    }
}
