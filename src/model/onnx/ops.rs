//! Weight extraction for operators with their own weight layout or quantization: each
//! returns the weight in PyTorch layout `[out, in]`, dequantized to f32.

use super::dequantize::{self, NBitsZeroPoints};
use super::proto::{dtype, NodeProto};
use super::tensor;
use super::{attr_i, attr_usize, input, is_ms, is_std, node_err, output, tensor_err};
use super::{Importer, OnnxError, Value};
use crate::model::weights::{ChannelQuant, Quant};
use std::borrow::Cow;

/// A linear layer found in the graph: `out = x · weightᵀ (+ bias)`.
pub(super) struct Linear<'a> {
    pub node: &'a NodeProto,
    /// `[out, in]`.
    pub weight: Value,
    pub bias: Option<Value>,
    /// The tensor holding the product (and the bias, once attached).
    pub out: String,
}

impl Linear<'_> {
    pub fn n_out(&self) -> usize {
        self.weight.shape.first().copied().unwrap_or(0)
    }
}

/// Ops that compute `x · W` from a constant W.
pub(super) fn is_linear_op(node: &NodeProto) -> bool {
    match node.op_type.as_str() {
        "MatMul" | "Gemm" | "MatMulInteger" => is_std(node),
        "MatMulNBits" | "MatMulBnb4" | "MatMulIntegerToFloat" => is_ms(node),
        _ => false,
    }
}

impl<'a> Importer<'a> {
    /// The linear layer `node` computes, when its weight is a constant; with `const_input`,
    /// also a `MatMul` whose input is itself computed from constants (DeBERTa's projection of
    /// its relative embeddings).
    pub(super) fn linear_site_of(
        &self,
        node: &'a NodeProto,
        const_input: bool,
    ) -> Result<Option<Linear<'a>>, OnnxError> {
        if !is_linear_op(node) {
            return Ok(None);
        }
        let site = |weight: Value, bias: Option<Value>, out: &str| Linear {
            node,
            weight,
            bias,
            out: out.to_string(),
        };
        Ok(match node.op_type.as_str() {
            "MatMul" => match self.resolve(input(node, 1), 0)? {
                Some(w)
                    if w.shape.len() == 2 && (const_input || !self.is_const(input(node, 0), 0)) =>
                {
                    Some(site(transposed(w)?, None, output(node)))
                }
                _ => None,
            },
            "Gemm" => self.gemm(node)?.map(|(w, b)| site(w, b, output(node))),
            "MatMulNBits" => {
                let (w, b) = self.matmul_nbits(node)?;
                Some(site(w, b, output(node)))
            }
            "MatMulBnb4" => Some(site(self.matmul_bnb4(node)?, None, output(node))),
            _ => self
                .matmul_integer(node)?
                .map(|(w, b, out)| site(w, b, &out)),
        })
    }

    /// `Y = alpha * A @ B' + beta * C`, B' = B or Bᵀ (`transB`).
    fn gemm(&self, node: &NodeProto) -> Result<Option<(Value, Option<Value>)>, OnnxError> {
        let Some(mut w) = self.resolve(input(node, 1), 0)? else {
            return Ok(None);
        };
        if w.shape.len() != 2 {
            return Ok(None);
        }
        let attr_f = |n: &str| {
            node.attribute
                .iter()
                .find(|a| a.name == n)
                .map_or(1.0, |a| a.f)
        };
        let alpha = attr_f("alpha");
        w.data.iter_mut().for_each(|x| *x *= alpha);
        let w = if attr_i(node, "transB") == Some(1) {
            w
        } else {
            transposed(w)?
        };
        let out_features = w.shape[0];
        let mut bias = None;
        if let Some(mut b) = self.resolve(input(node, 2), 0)? {
            if b.data.len() == out_features {
                let beta = attr_f("beta");
                b.data.iter_mut().for_each(|x| *x *= beta);
                b.shape = vec![out_features];
                bias = Some(b);
            } else {
                return Err(node_err(node, "C is not a bias of the output width"));
            }
        }
        Ok(Some((w, bias)))
    }

    /// The packed constant B of a contrib MatMul (`MatMulNBits`, `MatMulBnb4`) and its `K`, `N`.
    fn packed_b(&self, node: &NodeProto) -> Result<(Cow<'_, [u8]>, usize, usize), OnnxError> {
        let b_name = input(node, 1);
        let b = self
            .consts
            .get(b_name)
            .ok_or_else(|| node_err(node, "B is not a constant"))?;
        let b = tensor::to_u8(b).map_err(tensor_err(b_name))?;
        Ok((
            b,
            attr_usize(node, "K", None)?,
            attr_usize(node, "N", None)?,
        ))
    }

    /// `com.microsoft.MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?)`.
    fn matmul_nbits(&self, node: &NodeProto) -> Result<(Value, Option<Value>), OnnxError> {
        let (b, k, n) = self.packed_b(node)?;
        // What the weight takes once its sizes are found to fit B (at most 4 values a byte).
        let values = n.saturating_mul(k).min(b.len().saturating_mul(4));
        self.room(&format!("the weight of node `{}`", node.name), Some(values))?;
        let bits = attr_usize(node, "bits", Some(4))?;
        let block_size = attr_usize(node, "block_size", None)?;
        let scales = self
            .resolve(input(node, 2), 0)?
            .ok_or_else(|| node_err(node, "scales are not constant"))?;
        let zp_name = input(node, 3);
        let zp_packed = match self.consts.get(zp_name) {
            Some(t) if t.data_type == dtype::UINT8 => {
                Some(tensor::to_u8(t).map_err(tensor_err(zp_name))?)
            }
            _ => None,
        };
        let zp_float = self.resolve(zp_name, 0)?;
        let zero_points = match (&zp_packed, &zp_float) {
            (Some(z), _) => Some(NBitsZeroPoints::Packed(z)),
            (None, Some(z)) => Some(NBitsZeroPoints::Float(&z.data)),
            (None, None) if zp_name.is_empty() => None,
            _ => {
                return Err(node_err(
                    node,
                    "zero_points are not a uint8 or float constant",
                ))
            }
        };
        let g_idx = self.const_i32(input(node, 4))?.map(|(_, g)| g);
        let (data, quant) = dequantize::dequantize_nbits(
            &b,
            &scales.data,
            zero_points,
            g_idx.as_deref(),
            n,
            k,
            bits,
            block_size,
        )
        .map_err(|r| node_err(node, r))?;
        let mut w = Value::new(input(node, 1), vec![n, k], data);
        w.quant = quant.map(Quant::Block);
        Ok((w, self.resolve(input(node, 5), 0)?))
    }

    /// `com.microsoft.MatMulBnb4(A, B, absmax)`: FP4 / NF4 codes of Bᵀ in flat blocks.
    fn matmul_bnb4(&self, node: &NodeProto) -> Result<Value, OnnxError> {
        let (b, k, n) = self.packed_b(node)?;
        // What the weight takes once its sizes are found to fit B (at most 2 values a byte).
        let values = n.saturating_mul(k).min(b.len().saturating_mul(2));
        self.room(&format!("the weight of node `{}`", node.name), Some(values))?;
        let block_size = attr_usize(node, "block_size", None)?;
        let quant_type = attr_i(node, "quant_type").unwrap_or(1);
        let absmax = self
            .resolve(input(node, 2), 0)?
            .ok_or_else(|| node_err(node, "absmax is not a constant"))?;
        let data = dequantize::dequantize_bnb4(&b, &absmax.data, n, k, block_size, quant_type)
            .map_err(|r| node_err(node, r))?;
        Ok(Value::new(input(node, 1), vec![n, k], data))
    }

    /// `MatMulInteger(A, B, a_zp, b_zp)` from dynamic quantization: B's scale is found on the
    /// path `MatMulInteger → Cast → Mul(_, Mul(a_scale, b_scale))`, whose output is the
    /// layer's product. `com.microsoft.MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp,
    /// b_zp, bias)` has it inline.
    ///
    /// Here the integer form of a q8 weight is at hand: `q` (B's codes, `[in, out]`, int8
    /// or uint8 as i32), `scale.data` (one per output column, or one) and `zp` (the same).
    #[allow(clippy::type_complexity)]
    fn matmul_integer(
        &self,
        node: &NodeProto,
    ) -> Result<Option<(Value, Option<Value>, String)>, OnnxError> {
        let b_name = input(node, 1);
        // 8-bit codes stored raw are read as they are; others (and the fallback) as integers.
        let raw = self
            .consts
            .get(b_name)
            .and_then(|t| tensor::raw_8bit(t).map(|b| (t, b)));
        let (shape, ints) = match raw {
            Some((t, _)) => {
                let shape = tensor::shape(t).map_err(tensor_err(b_name))?;
                self.room(&format!("tensor `{b_name}`"), tensor::numel(&shape).ok())?;
                (shape, None)
            }
            None => match self.const_i32(b_name)? {
                Some((shape, q)) => (shape, Some(q)),
                None => return Ok(None),
            },
        };
        if shape.len() != 2 {
            return Err(node_err(
                node,
                format!("B has shape {shape:?}, expected 2-D"),
            ));
        }
        let fused = node.op_type == "MatMulIntegerToFloat";
        let (scale, zp, out) = if fused {
            (
                self.resolve(input(node, 3), 0)?,
                self.zero_point(input(node, 5))?,
                output(node).to_string(),
            )
        } else {
            let (scale, out) = self
                .dynamic_b_scale(node)?
                .ok_or_else(|| node_err(node, "cannot find the constant scale of B (expected MatMulInteger → Cast → Mul(_, Mul(a_scale, b_scale)))"))?;
            (Some(scale), self.zero_point(input(node, 3))?, out)
        };
        let scale = scale.ok_or_else(|| node_err(node, "the scale of B is not a constant"))?;
        let bytes: Cow<[u8]> = match (&raw, &ints) {
            (Some((_, b)), _) => Cow::Borrowed(b),
            (None, Some(q)) => Cow::Owned(q.iter().map(|&c| c as u8).collect()),
            (None, None) => unreachable!("B was read one way or the other"),
        };
        let whole = bytes.len() == shape[0] * shape[1];
        let w = match self.channel_codes(node, &bytes, &scale.data, zp.as_deref()) {
            // The codes transposed as bytes, then dequantized row by row: the same values as
            // `DequantizeLinear` then a transpose, in a quarter of the memory traffic.
            Some(Quant::Channel(c)) if whole => {
                let mut w = Value::new(b_name, vec![shape[1], shape[0]], c.dequantize());
                w.quant = Some(Quant::Channel(c));
                w
            }
            _ => {
                let q = match ints {
                    Some(q) => q,
                    None => (self.const_i32(b_name)?)
                        .map(|(_, q)| q)
                        .unwrap_or_default(),
                };
                let data = dequantize::dequantize_linear(
                    &q,
                    &shape,
                    &scale.data,
                    &scale.shape,
                    zp.as_deref(),
                    1,
                    0,
                )
                .map_err(|r| node_err(node, r))?;
                transposed(Value::new(b_name, shape, data))?
            }
        };
        let bias = if fused {
            self.resolve(input(node, 6), 0)?
        } else {
            None
        };
        Ok(Some((w, bias, out)))
    }

    /// B's codes kept per output channel (`[k, n]` int8/uint8 with per-column or per-tensor
    /// scale and zero point), when A is quantized by `DynamicQuantizeLinear`: the CPU then
    /// computes as onnxruntime does. A statically quantized A gets the f32 path only.
    fn channel_codes(
        &self,
        node: &NodeProto,
        codes: &[u8],
        scale: &[f32],
        zp: Option<&[f32]>,
    ) -> Option<Quant> {
        let b = self.consts.get(input(node, 1))?;
        let signed = match b.data_type {
            dtype::INT8 => true,
            dtype::UINT8 => false,
            _ => return None,
        };
        let dynamic = (self.producer.get(input(node, 0)))
            .is_some_and(|p| p.op_type == "DynamicQuantizeLinear");
        let &[k, n] = tensor::shape(b).ok()?.as_slice() else {
            return None;
        };
        let per_column = |len: usize| len == n || len == 1;
        if !dynamic || !per_column(scale.len()) || !zp.is_none_or(|z| per_column(z.len())) {
            return None;
        }
        let scales = (0..n).map(|j| scale[j % scale.len()]).collect();
        let zero_points = (0..n)
            .map(|j| zp.map_or(0, |z| z[j % z.len()] as i32))
            .collect();
        if codes.len() != k * n {
            return None;
        }
        let q = ChannelQuant::from_kn(signed, codes, k, scales, zero_points);
        Some(Quant::Channel(q))
    }

    /// The `DequantizeLinear` that `t` reaches through ops that only move values.
    pub(super) fn dequantize_after_moves(&self, t: &str) -> Option<&'a NodeProto> {
        let mut t = t;
        for _ in 0..4 {
            let [n] = self.consumers.get(t)?.as_slice() else {
                return None;
            };
            match n.op_type.as_str() {
                "DequantizeLinear" if input(n, 0) == t => return Some(n),
                "Transpose" | "Unsqueeze" | "Squeeze" | "Reshape" | "Identity"
                    if input(n, 0) == t =>
                {
                    t = output(n)
                }
                _ => return None,
            }
        }
        None
    }

    pub(super) fn only_consumer(&self, output: &str, op: &str) -> Option<&'a NodeProto> {
        match self.consumers.get(output)?.as_slice() {
            [n] if n.op_type == op => Some(n),
            _ => None,
        }
    }

    /// B's scale and the output of the rescaling Mul.
    fn dynamic_b_scale(&self, node: &NodeProto) -> Result<Option<(Value, String)>, OnnxError> {
        let Some(cast) = self.only_consumer(output(node), "Cast") else {
            return Ok(None);
        };
        let Some(mul) = self.only_consumer(output(cast), "Mul") else {
            return Ok(None);
        };
        let Some(other) = mul.input.iter().find(|i| i.as_str() != output(cast)) else {
            return Ok(None);
        };
        let Some(scales_mul) = self
            .producer
            .get(other.as_str())
            .filter(|n| n.op_type == "Mul")
        else {
            return Ok(None);
        };
        let mut found = None;
        for i in &scales_mul.input {
            if let Some(v) = self.resolve(i, 0)? {
                if found.replace(v).is_some() {
                    return Ok(None); // both scales constant: cannot tell B's apart
                }
            }
        }
        Ok(found.map(|v| (v, output(mul).to_string())))
    }
}

/// ONNX's `[in, out]` to PyTorch's `[out, in]`.
fn transposed(mut w: Value) -> Result<Value, OnnxError> {
    if let &[rows, cols] = w.shape.as_slice() {
        w.data = transpose2(&w.origin, &w.data, rows, cols)?;
        w.shape = vec![cols, rows];
        w.quant = None; // blocks run along the other axis now
    }
    Ok(w)
}

/// A `[rows, cols]` f32 array as `[cols, rows]`; data whose length disagrees with the shape
/// is refused.
pub(super) fn transpose2(
    name: &str,
    data: &[f32],
    rows: usize,
    cols: usize,
) -> Result<Vec<f32>, OnnxError> {
    if Some(data.len()) != rows.checked_mul(cols) {
        return Err(tensor_err(name)(format!(
            "{} values cannot be transposed as a [{rows}, {cols}] matrix",
            data.len()
        )));
    }
    Ok(crate::model::weights::transpose(data, rows, cols))
}
