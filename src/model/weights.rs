//! Named f32 tensors loaded from safetensors (f32/f16/bf16) or imported from ONNX.

use crate::error::{Error, Result};
use half::{bf16, f16};
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
    /// The integer form a `[n, k]` weight was stored in, when it came quantized (ONNX
    /// `MatMulNBits`, `MatMulInteger`): `data` is its exact dequantization. CPU kernels with
    /// integer dot products compute from it.
    pub quant: Option<Box<Quant>>,
}

impl Tensor {
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Self {
        debug_assert_eq!(shape.iter().product::<usize>(), data.len());
        Tensor {
            shape,
            data,
            quant: None,
        }
    }
}

/// The integer form of a quantized `[n, k]` weight.
#[derive(Debug, Clone, PartialEq)]
pub enum Quant {
    /// Blocks of consecutive k (q4 `MatMulNBits`).
    Block(BlockQuant),
    /// One scale and zero point per output channel (q8 `MatMulInteger`).
    Channel(ChannelQuant),
}

impl Quant {
    /// Stacks the rows of several matrices quantized alike (fused Q/K/V); `None` when the
    /// parts differ in kind, block or signedness.
    pub fn concat<'a>(parts: impl IntoIterator<Item = &'a Quant>) -> Option<Quant> {
        let parts: Vec<&Quant> = parts.into_iter().collect();
        if let Some(b) = parts
            .iter()
            .map(|q| q.as_block())
            .collect::<Option<Vec<_>>>()
        {
            return BlockQuant::concat(b).map(Quant::Block);
        }
        let c = parts
            .iter()
            .map(|q| q.as_channel())
            .collect::<Option<Vec<_>>>()?;
        ChannelQuant::concat(c).map(Quant::Channel)
    }

    /// The two halves of the rows swapped (`[up | gate]` → `[gate | up]`); every per-row
    /// array is row-major, so each turns by half its length.
    pub fn swap_row_halves(&mut self) {
        fn turn<T>(v: &mut [T]) {
            let half = v.len() / 2;
            v.rotate_left(half);
        }
        match self {
            Quant::Block(b) => {
                turn(&mut b.codes);
                turn(&mut b.scales);
                turn(&mut b.zero_points);
            }
            Quant::Channel(c) => {
                turn(&mut c.codes);
                turn(&mut c.scales);
                turn(&mut c.zero_points);
            }
        }
    }

    pub fn as_block(&self) -> Option<&BlockQuant> {
        match self {
            Quant::Block(b) => Some(b),
            Quant::Channel(_) => None,
        }
    }

    pub fn as_channel(&self) -> Option<&ChannelQuant> {
        match self {
            Quant::Channel(c) => Some(c),
            Quant::Block(_) => None,
        }
    }
}

/// A `[n, k]` matrix quantized in blocks of `block` consecutive k:
/// `w[j][kk] = (codes[j][kk] - zero_points[j][b]) * scales[j][b]` with `b = kk / block`.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockQuant {
    pub block: usize,
    /// One unsigned code per weight, `[n, k]`, each below 128.
    pub codes: Vec<u8>,
    /// `[n, k.div_ceil(block)]`.
    pub scales: Vec<f32>,
    pub zero_points: Vec<f32>,
}

impl BlockQuant {
    pub fn blocks(&self, k: usize) -> usize {
        k.div_ceil(self.block)
    }

    /// Stacks the rows of several matrices with the same `k` and block (fused Q/K/V).
    pub fn concat<'a>(parts: impl IntoIterator<Item = &'a BlockQuant>) -> Option<BlockQuant> {
        let mut parts = parts.into_iter();
        let mut out = parts.next()?.clone();
        for p in parts {
            if p.block != out.block {
                return None;
            }
            out.codes.extend_from_slice(&p.codes);
            out.scales.extend_from_slice(&p.scales);
            out.zero_points.extend_from_slice(&p.zero_points);
        }
        Some(out)
    }
}

/// A `[n, k]` matrix quantized per output channel (row j; ONNX's per-column quantization of
/// the `[k, n]` MatMul operand): `w[j][kk] = (code(j, kk) − zero_points[j]) · scales[j]`.
/// The codes are the 8-bit values as stored: int8 (two's-complement bytes, `signed`) or uint8.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelQuant {
    pub signed: bool,
    /// `[n, k]`.
    pub codes: Vec<u8>,
    /// `[n]`.
    pub scales: Vec<f32>,
    /// `[n]`, in the codes' range.
    pub zero_points: Vec<i32>,
}

impl ChannelQuant {
    /// The code at flat index `i` of `[n, k]` as an integer.
    pub fn code(&self, i: usize) -> i32 {
        if self.signed {
            self.codes[i] as i8 as i32
        } else {
            self.codes[i] as i32
        }
    }

    /// From the `[k, n]` layout of an ONNX MatMul operand (`codes[kk * n + j]`).
    pub fn from_kn(
        signed: bool,
        codes: &[u8],
        k: usize,
        scales: Vec<f32>,
        zero_points: Vec<i32>,
    ) -> Self {
        let n = scales.len();
        debug_assert_eq!(codes.len(), k * n);
        let codes = transpose(codes, k, n);
        ChannelQuant {
            signed,
            codes,
            scales,
            zero_points,
        }
    }

    /// The exact dequantization, `[n, k]`.
    pub fn dequantize(&self) -> Vec<f32> {
        let n = self.scales.len();
        let k = self.codes.len() / n.max(1);
        let mut out = Vec::with_capacity(self.codes.len());
        if k == 0 {
            return out;
        }
        let rows = self.codes.chunks_exact(k).zip(&self.scales);
        for ((row, &s), &z) in rows.zip(&self.zero_points) {
            if self.signed {
                out.extend(row.iter().map(|&c| (c as i8 as i32 - z) as f32 * s));
            } else {
                out.extend(row.iter().map(|&c| (c as i32 - z) as f32 * s));
            }
        }
        out
    }

    /// Stacks the rows of several matrices with the same `k` and signedness.
    pub fn concat<'a>(parts: impl IntoIterator<Item = &'a ChannelQuant>) -> Option<ChannelQuant> {
        let mut parts = parts.into_iter();
        let mut out = parts.next()?.clone();
        for p in parts {
            if p.signed != out.signed {
                return None;
            }
            out.codes.extend_from_slice(&p.codes);
            out.scales.extend_from_slice(&p.scales);
            out.zero_points.extend_from_slice(&p.zero_points);
        }
        Some(out)
    }
}

/// A row-major `[rows, cols]` array as `[cols, rows]`, in square tiles so that both the reads
/// and the writes stay in cache (a model's weights are transposed at load).
pub fn transpose<T: Copy + Default>(data: &[T], rows: usize, cols: usize) -> Vec<T> {
    const TILE: usize = 32;
    assert_eq!(data.len(), rows * cols, "transpose of {rows} x {cols}");
    let mut out = vec![T::default(); data.len()];
    for r0 in (0..rows).step_by(TILE) {
        for c0 in (0..cols).step_by(TILE) {
            for r in r0..(r0 + TILE).min(rows) {
                let row = &data[r * cols..(r + 1) * cols];
                for c in c0..(c0 + TILE).min(cols) {
                    out[c * rows + r] = row[c];
                }
            }
        }
    }
    out
}

#[derive(Debug, Default)]
pub struct Weights {
    tensors: HashMap<String, Tensor>,
    /// Draws whatever is taken and absent (seeded random tensors: benchmarks of any family
    /// at any size, `synthetic.rs`).
    fabricate: Option<Box<dyn DrawTensor>>,
}

/// Makes up a tensor a file lacks, from its name and shape.
pub trait DrawTensor: std::fmt::Debug + Send + Sync {
    fn tensor(&self, name: &str, shape: &[usize]) -> Tensor;
}

/// Converts little-endian values of `size` bytes to f32 into a fallibly allocated vector.
fn convert(raw: &[u8], size: usize, what: &str, f: impl Fn(&[u8]) -> f32) -> Result<Vec<f32>> {
    let mut out = super::budget::try_vec(raw.len() / size, what)?;
    out.extend(raw.chunks_exact(size).map(f));
    Ok(out)
}

impl Weights {
    /// No tensors: every one taken is drawn at random (see `synthetic.rs`).
    pub fn fabricated(f: impl DrawTensor + 'static) -> Self {
        Weights {
            fabricate: Some(Box::new(f)),
            ..Default::default()
        }
    }

    pub fn insert(&mut self, name: String, t: Tensor) {
        self.tensors.insert(name, t);
    }

    /// Tensors named `{from}.…` renamed `{to}.…` (another spelling of the base model's
    /// prefix).
    pub fn rename_prefix(&mut self, from: &str, to: &str) {
        let from = format!("{from}.");
        let names: Vec<String> = (self.tensors.keys())
            .filter(|k| k.starts_with(&from))
            .cloned()
            .collect();
        for name in names {
            if let Some(t) = self.tensors.remove(&name) {
                self.tensors
                    .insert(format!("{to}.{}", &name[from.len()..]), t);
            }
        }
    }

    /// Bytes the tensors hold (f32 values and integer codes).
    pub fn bytes(&self) -> u64 {
        (self.tensors.values())
            .map(|t| {
                let codes = match t.quant.as_deref() {
                    Some(Quant::Block(q)) => q.codes.len() + 8 * q.scales.len(),
                    Some(Quant::Channel(q)) => q.codes.len() + 8 * q.scales.len(),
                    None => 0,
                };
                4 * t.data.len() as u64 + codes as u64
            })
            .sum()
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Tensor> {
        self.tensors.get_mut(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.tensors.keys()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Tensor)> {
        self.tensors.iter()
    }

    /// Adds every floating-point tensor of a safetensors file; integer buffers such as
    /// `position_ids` are not weights and are skipped.
    pub fn add_safetensors(&mut self, file: &str, bytes: &[u8]) -> Result<()> {
        self.add_safetensors_within(file, bytes, super::budget::DEFAULT)
    }

    /// As [`Self::add_safetensors`], refusing a file whose tensors, as f32 and with those
    /// already held, would take more than `budget` bytes, before converting any. The header's
    /// offsets are checked against the file, and each tensor's dtype × shape against its byte
    /// range, by the safetensors parser before any data is read.
    pub fn add_safetensors_within(&mut self, file: &str, bytes: &[u8], budget: u64) -> Result<()> {
        let st = SafeTensors::deserialize(bytes).map_err(|e| Error::Safetensors {
            file: file.to_string(),
            msg: e.to_string(),
        })?;
        let float = |d: Dtype| matches!(d, Dtype::F32 | Dtype::F16 | Dtype::BF16);
        let declared = (st.tensors().iter())
            .filter(|(_, v)| float(v.dtype()))
            .try_fold(self.bytes(), |sum, (_, v)| {
                sum.checked_add(super::budget::f32_bytes(v.shape())?)
            });
        super::budget::check(|| format!("{file}: the weights as f32"), declared, budget)?;
        for (name, view) in st.tensors() {
            let raw = view.data();
            let data: Vec<f32> = match view.dtype() {
                Dtype::F32 => convert(raw, 4, &name, |c| {
                    f32::from_le_bytes([c[0], c[1], c[2], c[3]])
                })?,
                Dtype::F16 => {
                    convert(raw, 2, &name, |c| f16::from_le_bytes([c[0], c[1]]).to_f32())?
                }
                Dtype::BF16 => convert(raw, 2, &name, |c| {
                    bf16::from_le_bytes([c[0], c[1]]).to_f32()
                })?,
                _ => continue,
            };
            self.insert(name, Tensor::new(view.shape().to_vec(), data));
        }
        Ok(())
    }

    /// Finds a tensor under its canonical name, with or without the model prefix
    /// (`bert.`, `distilbert.`, …) and under legacy LayerNorm names (`gamma`/`beta`).
    pub fn find(&self, prefix: &str, name: &str) -> Option<(&str, &Tensor)> {
        let legacy = name
            .strip_suffix(".weight")
            .map(|s| format!("{s}.gamma"))
            .or_else(|| name.strip_suffix(".bias").map(|s| format!("{s}.beta")));
        let mut candidates = vec![name.to_string(), format!("{prefix}.{name}")];
        if let Some(l) = legacy {
            candidates.push(format!("{prefix}.{l}"));
            candidates.push(l);
        }
        candidates
            .into_iter()
            .find_map(|c| self.tensors.get_key_value(&c))
            .map(|(k, t)| (k.as_str(), t))
    }

    /// Removes and returns a tensor, checking its shape.
    pub fn take(&mut self, prefix: &str, name: &str, shape: &[usize]) -> Result<Tensor> {
        if let Some(f) = (self.fabricate.as_ref()).filter(|_| self.find(prefix, name).is_none()) {
            return Ok(f.tensor(name, shape));
        }
        let (key, t) = self
            .find(prefix, name)
            .ok_or_else(|| Error::MissingTensor(format!("{prefix}.{name}")))?;
        if t.shape != shape {
            // Left in place: a caller may take it again at its own shape.
            return Err(Error::TensorShape {
                name: key.to_string(),
                got: t.shape.clone(),
                expected: shape.to_vec(),
            });
        }
        let key = key.to_string();
        self.tensors
            .remove(&key)
            .ok_or_else(|| Error::MissingTensor(key.clone()))
    }

    pub fn contains(&self, prefix: &str, name: &str) -> bool {
        self.find(prefix, name).is_some()
    }

    /// Writes the tensors as an f32 safetensors file (used by `import-onnx`).
    pub fn to_safetensors(&self) -> Result<Vec<u8>> {
        let mut names: Vec<&String> = self.tensors.keys().collect();
        names.sort();
        let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = names
            .iter()
            .map(|n| {
                let t = &self.tensors[*n];
                let b = t.data.iter().flat_map(|x| x.to_le_bytes()).collect();
                (n.to_string(), t.shape.clone(), b)
            })
            .collect();
        let views = bytes
            .iter()
            .map(|(n, s, b)| {
                safetensors::tensor::TensorView::new(Dtype::F32, s.clone(), b)
                    .map(|v| (n.clone(), v))
                    .map_err(|e| Error::Safetensors {
                        file: n.clone(),
                        msg: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        safetensors::serialize(views, None).map_err(|e| Error::Safetensors {
            file: "output".into(),
            msg: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_moves_every_element() {
        for (rows, cols) in [(37, 70), (1, 5), (64, 32), (0, 3), (33, 1)] {
            let data: Vec<u32> = (0..rows * cols).map(|i| i as u32).collect();
            let t = transpose(&data, rows, cols);
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(t[c * rows + r], data[r * cols + c], "{rows} x {cols}");
                }
            }
        }
    }

    #[test]
    fn safetensors_roundtrip_and_lookup() {
        let mut w = Weights::default();
        w.insert(
            "bert.encoder.LayerNorm.gamma".into(),
            Tensor::new(vec![2], vec![1.0, 2.0]),
        );
        w.insert("pooler.dense.bias".into(), Tensor::new(vec![1], vec![0.5]));
        let bytes = w.to_safetensors().unwrap();
        let mut back = Weights::default();
        back.add_safetensors("t", &bytes).unwrap();
        assert_eq!(back.len(), 2);
        let (k, t) = back.find("bert", "encoder.LayerNorm.weight").unwrap();
        assert_eq!(k, "bert.encoder.LayerNorm.gamma");
        assert_eq!(t.data, vec![1.0, 2.0]);
        assert!(back.find("bert", "pooler.dense.bias").is_some());
        let err = back.take("bert", "pooler.dense.bias", &[2]).unwrap_err();
        assert!(err.to_string().contains("shape"), "{err}");
    }

    #[test]
    fn corrupt_safetensors_is_an_error() {
        let mut w = Weights::default();
        assert!(w.add_safetensors("x", &[1, 2, 3]).is_err());
        assert!(w.add_safetensors("x", &[255; 64]).is_err());
    }

    #[test]
    fn half_precision_is_converted() {
        let b: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|x| f16::from_f32(*x).to_le_bytes())
            .collect();
        let v = safetensors::tensor::TensorView::new(Dtype::F16, vec![2], &b).unwrap();
        let bytes = safetensors::serialize(vec![("a", v)], None).unwrap();
        let mut w = Weights::default();
        w.add_safetensors("h", &bytes).unwrap();
        assert_eq!(w.find("bert", "a").unwrap().1.data, vec![1.5, -2.0]);
    }
}
