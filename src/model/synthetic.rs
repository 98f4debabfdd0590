//! Seeded random weights for any family's config: timing models of any size (bert-base,
//! bert-large) without a checkpoint. Not for answers — for benchmarks only. The plan builder
//! asks for every tensor by name and shape, so each family's weights follow from its table
//! entry with nothing listed here.

use super::config::ModelConfig;
use super::weights::{BlockQuant, ChannelQuant, DrawTensor, Quant, Tensor, Weights};

/// Standard shapes by name: `bert-base`, `bert-large`, `minilm-l6`; or any, written
/// `HIDDENxLAYERSxHEADSxINTERMEDIATE` (`768x12x12x4608`). [`random_model`] also takes
/// `config`: the config's own sizes.
pub fn shape(name: &str) -> Option<(usize, usize, usize, usize)> {
    // (hidden, layers, heads, intermediate)
    match name {
        "bert-base" => Some((768, 12, 12, 3072)),
        "bert-large" => Some((1024, 24, 16, 4096)),
        "minilm-l6" => Some((384, 6, 12, 1536)),
        _ => {
            let n: Vec<usize> = name
                .split('x')
                .map(|p| p.parse().ok())
                .collect::<Option<_>>()?;
            match n[..] {
                [h, l, a, i] if h > 0 && l > 0 && a > 0 && i > 0 && h % a == 0 => {
                    Some((h, l, a, i))
                }
                _ => None,
            }
        }
    }
}

/// How to draw the tensors the plan builder takes: a seed, and the encoder's linear weights
/// quantized as the transformers.js exports are (`Some(true)`: q8, `Some(false)`: q4).
#[derive(Debug, Clone, Copy)]
pub struct Fabricate {
    pub seed: u64,
    pub quantize: Option<bool>,
}

impl DrawTensor for Fabricate {
    /// A tensor of `shape` drawn from the seed and its name (the same whatever the order in
    /// which tensors are taken): uniform in ±0.05, LayerNorm-like vectors around 1.
    fn tensor(&self, name: &str, shape: &[usize]) -> Tensor {
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
        let mut state = (self.seed ^ hash).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let n = shape.iter().product();
        let gain = shape.len() == 1 && name.ends_with(".weight") && name.contains("orm");
        let data = (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let x = ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1;
                if gain {
                    1.0 + x
                } else {
                    x
                }
            })
            .collect();
        let mut t = Tensor::new(shape.to_vec(), data);
        if let (Some(q8), true) = (self.quantize, shape.len() == 2 && name.contains("layer")) {
            quantize_tensor(&mut t, q8);
        }
        t
    }
}

/// Resizes `cfg` to a named shape (base model, no head) and gives weights that are drawn as
/// the plan takes them. DeBERTa's relative attention gets deberta-v3-base's 256 buckets.
pub fn random_model(
    mut cfg: ModelConfig,
    name: &str,
    fabricate: Fabricate,
) -> Option<(ModelConfig, Weights)> {
    if name == "config" {
        return Some((cfg, Weights::fabricated(fabricate)));
    }
    let (h, layers, heads, inter) = shape(name)?;
    // Rotary keeps its share of the head, sliding windows their layer pattern.
    let old_head = cfg.head_dim();
    if let Some(r) = &mut cfg.rotary {
        r.dim = (h / heads * r.dim / old_head) & !1;
    }
    let period = (1..=cfg.windows.len())
        .find(|&p| (cfg.windows.iter().enumerate()).all(|(i, w)| *w == cfg.windows[i % p]));
    if let Some(p) = period {
        cfg.windows = (0..layers).map(|i| cfg.windows[i % p]).collect();
    }
    cfg.hidden_size = h;
    cfg.embedding_size = h;
    cfg.num_layers = layers;
    // Grouped K/V heads keep their group where it divides the new heads.
    let group = cfg.num_heads / cfg.kv_heads.max(1);
    cfg.kv_heads = match heads.is_multiple_of(group) {
        true => heads / group,
        false => heads,
    };
    cfg.num_heads = heads;
    cfg.intermediate_size = inter;
    cfg.architecture = super::Architecture::Base;
    cfg.max_position_embeddings = cfg.max_position_embeddings.max(512 + cfg.position_offset);
    if let Some(d) = &mut cfg.disentangled {
        (d.buckets, d.max_relative, d.span) = (256, 512, 256);
    }
    Some((cfg, Weights::fabricated(fabricate)))
}

/// Replaces a linear weight by its symmetric quantization, as the transformers.js exports
/// have them: `q8` per output channel (int8, zero point 0, onnxruntime's reduce_range codes
/// -64..=64), else 4-bit in blocks of 32 (zero point 8); its values become the dequantized
/// ones.
fn quantize_tensor(t: &mut Tensor, q8: bool) {
    let &[n, k] = t.shape.as_slice() else {
        return;
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

#[cfg(test)]
mod tests {
    #[test]
    fn shapes_by_name_or_by_numbers() {
        assert_eq!(super::shape("bert-base"), Some((768, 12, 12, 3072)));
        assert_eq!(super::shape("768x12x12x4608"), Some((768, 12, 12, 4608)));
        for bad in ["768x12x12", "768x12x7x3072", "0x1x1x1", "bert", "1x2x3xq"] {
            assert_eq!(super::shape(bad), None, "{bad}");
        }
    }

    /// Grouped K/V heads follow a resize: 4 heads in 2 groups become 12 in 6, or 5 heads
    /// with one K/V head each; both build.
    #[test]
    fn grouped_kv_heads_follow_the_shape() {
        use super::super::{config::ModelConfig, plan::Plan};
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/tiny/eurobert-seqcls-mean-gqa"
        );
        let text = std::fs::read_to_string(format!("{dir}/config.json")).unwrap();
        let cfg = ModelConfig::from_json("config.json", &text).unwrap();
        assert_eq!((cfg.num_heads, cfg.kv_heads), (4, 2));
        let fab = super::Fabricate {
            seed: 1,
            quantize: None,
        };
        for (shape, kv) in [("96x2x12x64", 6), ("40x1x5x64", 5)] {
            let (cfg, w) = super::random_model(cfg.clone(), shape, fab).unwrap();
            assert_eq!(cfg.kv_heads, kv, "{shape}");
            Plan::build(cfg, w).unwrap_or_else(|e| panic!("{shape}: {e}"));
        }
    }
}
