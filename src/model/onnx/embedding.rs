//! Embedding tables: a float constant behind its dequantization, an integer table whose
//! looked-up rows are dequantized after the `Gather`, or `GatherBlockQuantized`'s blocks.

use super::proto::{dtype, NodeProto};
use super::{attr_i, attr_usize, dequantize, input, is_ms, is_std, node_err, output};
use super::{tensor, tensor_err};
use super::{Importer, OnnxError, Value};

impl<'a> Importer<'a> {
    /// An embedding table read by `node`: a float constant (behind its dequantization), an
    /// integer table whose rows are dequantized after the lookup (`Gather → DequantizeLinear`
    /// or `Gather → Cast → Mul(scale)`), or `GatherBlockQuantized`. Returns the table and the
    /// tensor holding the looked-up rows as floats.
    pub(super) fn embedding(&self, node: &NodeProto) -> Result<Option<(Value, String)>, OnnxError> {
        if node.op_type == "GatherBlockQuantized" && is_ms(node) {
            return Ok(Some((
                self.gather_block_quantized(node)?,
                output(node).into(),
            )));
        }
        if node.op_type != "Gather" || !is_std(node) || attr_i(node, "axis").unwrap_or(0) != 0 {
            return Ok(None);
        }
        let data = input(node, 0);
        if let Some(v) = self.resolve(data, 0)? {
            return Ok((v.shape.len() == 2).then(|| (v, output(node).into())));
        }
        let Some((shape, q)) = self.const_i32(data)? else {
            return Ok(None);
        };
        if shape.len() != 2 {
            return Ok(None);
        }
        // Per-axis scales after a lookup can only run along the table's last axis.
        let deq = |scale: Value, zp: Option<Vec<f32>>, at: &NodeProto| {
            dequantize::dequantize_linear(
                &q,
                &shape,
                &scale.data,
                &scale.shape,
                zp.as_deref(),
                -1,
                0,
            )
            .map(|values| Value::new(data, shape.clone(), values))
            .map_err(|r| node_err(at, r))
        };
        if let Some(dq) = self.only_consumer(output(node), "DequantizeLinear") {
            let scale = self
                .resolve(input(dq, 1), 0)?
                .ok_or_else(|| node_err(dq, "scale is not a constant"))?;
            let zp = self.zero_point(input(dq, 2))?;
            return Ok(Some((deq(scale, zp, dq)?, output(dq).into())));
        }
        // onnxruntime's quantizer moves the codes (`Gather → Transpose → DequantizeLinear`, as
        // MPNet's relative bias lookup) when one scale serves the whole table.
        if let Some(dq) = self.dequantize_after_moves(output(node)) {
            let scale = self
                .resolve(input(dq, 1), 0)?
                .ok_or_else(|| node_err(dq, "scale is not a constant"))?;
            let zp = self.zero_point(input(dq, 2))?;
            if scale.data.len() == 1 && zp.as_ref().is_none_or(|z| z.len() == 1) {
                return Ok(Some((deq(scale, zp, dq)?, output(dq).into())));
            }
        }
        if let Some(cast) = self.only_consumer(output(node), "Cast") {
            if let Some(mul) = self.only_consumer(output(cast), "Mul") {
                let other = mul.input.iter().find(|i| i.as_str() != output(cast));
                if let Some(scale) = other.map(|o| self.resolve(o, 0)).transpose()?.flatten() {
                    let flat = Value::new("", vec![scale.data.len()], scale.data);
                    return Ok(Some((deq(flat, None, mul)?, output(mul).into())));
                }
            }
        }
        Err(node_err(
            node,
            "integer embedding table without a recognised dequantization",
        ))
    }

    /// `com.microsoft.GatherBlockQuantized(data, indices, scales, zero_points?)` on a 2-D table
    /// quantized in blocks along its rows.
    pub(super) fn gather_block_quantized(&self, node: &NodeProto) -> Result<Value, OnnxError> {
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
            let values = 8usize
                .checked_div(bits)
                .and_then(|v| bytes.len().checked_mul(v));
            self.room(&format!("the table of node `{}`", node.name), values)?;
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
        let data = dequantize::dequantize_linear(
            &q,
            &shape,
            &scales.data,
            &scales.shape,
            zp.as_deref(),
            1,
            block_size,
        )
        .map_err(|r| node_err(node, r))?;
        Ok(Value::new(data_name, shape, data))
    }
}
