//! Weight extraction for operators with their own weight layout or quantization.

use super::proto::{dtype, NodeProto};
use super::tensor::{self, NBitsZeroPoints};
use super::{attr_i, attr_usize, input, node_err, tensor_err, Importer, Kind, OnnxError, Value};

impl<'a> Importer<'a> {
    /// `Y = alpha * A @ B' + beta * C`, B' = B or Bᵀ (`transB`).
    pub(super) fn gemm(&mut self, node: &NodeProto) -> Result<(), OnnxError> {
        let Some(mut w) = self.resolve(input(node, 1), 0)? else {
            return Ok(());
        };
        let &[rows, cols] = w.shape.as_slice() else {
            return Ok(());
        };
        let attr_f = |n: &str| {
            node.attribute
                .iter()
                .find(|a| a.name == n)
                .map_or(1.0, |a| a.f)
        };
        let alpha = attr_f("alpha");
        w.data.iter_mut().for_each(|x| *x *= alpha);
        let trans_b = attr_i(node, "transB") == Some(1);
        let out_features = if trans_b { rows } else { cols };
        self.push_linear(node, w, trans_b)?;
        if let Some(mut b) = self.resolve(input(node, 2), 0)? {
            if b.data.len() == out_features {
                let beta = attr_f("beta");
                b.data.iter_mut().for_each(|x| *x *= beta);
                b.shape = vec![out_features];
                self.push(node, Kind::Bias, b)?;
            }
        }
        Ok(())
    }

    /// `com.microsoft.MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?)`.
    pub(super) fn matmul_nbits(&mut self, node: &NodeProto) -> Result<(), OnnxError> {
        let b_name = input(node, 1);
        let b = self
            .consts
            .get(b_name)
            .ok_or_else(|| node_err(node, "B is not a constant"))?;
        let b = tensor::to_u8(b).map_err(tensor_err(b_name))?;
        let k = attr_usize(node, "K", None)?;
        let n = attr_usize(node, "N", None)?;
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
        let (data, quant) = tensor::dequantize_nbits(
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
        let mut w = Value::new(b_name, vec![n, k], data);
        w.quant = quant;
        self.push_linear(node, w, true)?;
        if let Some(bias) = self.resolve(input(node, 5), 0)? {
            self.push(node, Kind::Bias, bias)?;
        }
        Ok(())
    }

    /// `MatMulInteger(A, B, a_zp, b_zp)` from dynamic quantization: B's scale is found on the
    /// path `MatMulInteger → Cast → Mul(_, Mul(a_scale, b_scale))`.
    /// `com.microsoft.MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp, b_zp, bias)` has it inline.
    pub(super) fn matmul_integer(&mut self, node: &NodeProto) -> Result<(), OnnxError> {
        let b_name = input(node, 1);
        let Some((shape, q)) = self.const_i32(b_name)? else {
            return Ok(());
        };
        if shape.len() != 2 {
            return Err(node_err(
                node,
                format!("B has shape {shape:?}, expected 2-D"),
            ));
        }
        let fused = node.op_type == "MatMulIntegerToFloat";
        let (scale, zp) = if fused {
            (
                self.resolve(input(node, 3), 0)?,
                self.zero_point(input(node, 5))?,
            )
        } else {
            (
                self.dynamic_b_scale(node)?,
                self.zero_point(input(node, 3))?,
            )
        };
        let scale = scale.ok_or_else(|| node_err(node, "cannot find the constant scale of B"))?;
        let data =
            tensor::dequantize_linear(&q, &shape, &scale.data, &scale.shape, zp.as_deref(), 1, 0)
                .map_err(|r| node_err(node, r))?;
        self.push_linear(node, Value::new(b_name, shape, data), false)?;
        let bias = if fused {
            self.resolve(input(node, 6), 0)?
        } else {
            None
        };
        if let Some(bias) = bias {
            self.push(node, Kind::Bias, bias)?;
        }
        Ok(())
    }

    fn only_consumer(&self, output: Option<&String>, op: &str) -> Option<&'a NodeProto> {
        match self.consumers.get(output?.as_str())?.as_slice() {
            [n] if n.op_type == op => Some(n),
            _ => None,
        }
    }

    fn dynamic_b_scale(&self, node: &NodeProto) -> Result<Option<Value>, OnnxError> {
        let Some(cast) = self.only_consumer(node.output.first(), "Cast") else {
            return Ok(None);
        };
        let Some(mul) = self.only_consumer(cast.output.first(), "Mul") else {
            return Ok(None);
        };
        let Some(other) = mul.input.iter().find(|i| Some(*i) != cast.output.first()) else {
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
        Ok(found)
    }

    /// Embedding tables: a float constant, or an integer table whose lookup result goes
    /// through DequantizeLinear (onnxruntime's quantized embeddings).
    pub(super) fn gather(&mut self, node: &NodeProto) -> Result<(), OnnxError> {
        let data = input(node, 0);
        if attr_i(node, "axis").unwrap_or(0) != 0 {
            return Ok(());
        }
        if let Some(v) = self.resolve(data, 0)? {
            if v.shape.len() >= 2 {
                self.push(node, Kind::Weight, v)?;
            }
            return Ok(());
        }
        let Some(dq) = self.only_consumer(node.output.first(), "DequantizeLinear") else {
            return Ok(());
        };
        let Some((shape, q)) = self.const_i32(data)? else {
            return Ok(());
        };
        let scale = self
            .resolve(input(dq, 1), 0)?
            .ok_or_else(|| node_err(dq, "scale is not a constant"))?;
        let zp = self.zero_point(input(dq, 2))?;
        // Per-axis scales after a Gather can only run along the table's last axis.
        let values =
            tensor::dequantize_linear(&q, &shape, &scale.data, &scale.shape, zp.as_deref(), -1, 0)
                .map_err(|r| node_err(dq, r))?;
        self.push(node, Kind::Weight, Value::new(data, shape, values))
    }

    /// `com.microsoft.GatherBlockQuantized(data, indices, scales, zero_points?)` on a 2-D table
    /// quantized in blocks along its rows.
    pub(super) fn gather_block_quantized(&mut self, node: &NodeProto) -> Result<(), OnnxError> {
        let data_name = input(node, 0);
        let t = self
            .consts
            .get(data_name)
            .ok_or_else(|| node_err(node, "data is not a constant"))?;
        let bits = attr_usize(node, "bits", Some(4))?;
        let block_size = attr_usize(node, "block_size", Some(128))?;
        let gather_axis = attr_i(node, "gather_axis").unwrap_or(0);
        let quantize_axis = attr_i(node, "quantize_axis").unwrap_or(1);
        let dims = tensor::shape(t).map_err(tensor_err(data_name))?;
        let (&[rows, stored_cols], 0, 1 | -1) = (dims.as_slice(), gather_axis, quantize_axis)
        else {
            return Err(node_err(
                node,
                "only 2-D tables with gather_axis=0, quantize_axis=1 are supported",
            ));
        };
        let scales = self
            .resolve(input(node, 2), 0)?
            .ok_or_else(|| node_err(node, "scales are not constant"))?;
        let zp_name = input(node, 3);
        let (q, zp) = if t.data_type == dtype::UINT8 {
            // uint8 storage packs 8/bits values per byte, like MatMulNBits (default zero point 2^(bits-1)).
            let bytes = tensor::to_u8(t).map_err(tensor_err(data_name))?;
            let q = tensor::unpack_bits(&bytes, bits).map_err(|r| node_err(node, r))?;
            let zp = match self.consts.get(zp_name) {
                Some(z) => {
                    let z = tensor::to_u8(z).map_err(tensor_err(zp_name))?;
                    let blocks = scales.data.len() / rows.max(1);
                    let per_row = (blocks * bits).div_ceil(8);
                    if per_row == 0 || Some(z.len()) != rows.checked_mul(per_row) {
                        let reason = format!(
                            "zero_points have {} bytes, expected {rows} x {per_row}",
                            z.len()
                        );
                        return Err(node_err(node, reason));
                    }
                    let mut out = Vec::with_capacity(scales.data.len());
                    for row in z.chunks_exact(per_row) {
                        let v = tensor::unpack_bits(row, bits).map_err(|r| node_err(node, r))?;
                        out.extend(v.into_iter().take(blocks).map(|v| v as f32));
                    }
                    out
                }
                None => vec![(1u32 << (bits - 1)) as f32; scales.data.len()],
            };
            (q, Some(zp))
        } else {
            let (_, q) = self
                .const_i32(data_name)?
                .ok_or_else(|| node_err(node, "unsupported data type"))?;
            (q, self.zero_point(zp_name)?)
        };
        let cols = q.len().checked_div(rows).unwrap_or(stored_cols);
        let shape = vec![rows, cols];
        let data = tensor::dequantize_linear(
            &q,
            &shape,
            &scales.data,
            &scales.shape,
            zp.as_deref(),
            1,
            block_size,
        )
        .map_err(|r| node_err(node, r))?;
        self.push(node, Kind::Weight, Value::new(data_name, shape, data))
    }
}
