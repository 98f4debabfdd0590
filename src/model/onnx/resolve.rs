//! Constant folding: the float constant behind a node input, through the casts, transposes,
//! reshapes, dequantization and elementwise arithmetic that exports put between an initializer
//! and the node that reads it.

use super::{attr_i, attr_usize, dequantize, input, is_std, node_err, ops, tensor};
use super::{Importer, OnnxError, Value};

impl<'a> Importer<'a> {
    /// A float constant behind `name`: an initializer / Constant, or one computed from
    /// constants through Identity, Cast (also of integer data), 2-D Transpose, Reshape to the
    /// same data, DequantizeLinear, or elementwise Mul / Sub / Add / Div (weight-only
    /// quantization such as `Cast(int8) → Mul(scale)`).
    pub(super) fn resolve(&self, name: &str, depth: usize) -> Result<Option<Value>, OnnxError> {
        if name.is_empty() || depth > 16 {
            return Ok(None);
        }
        if let Some(t) = self.consts.get(name) {
            return if tensor::is_float(t.data_type) {
                self.tensor_f32(name, t).map(Some)
            } else {
                Ok(None)
            };
        }
        let Some(&node) = self.producer.get(name) else {
            return Ok(None);
        };
        if !is_std(node) {
            return Ok(None);
        }
        match node.op_type.as_str() {
            "Identity" => self.resolve(input(node, 0), depth + 1),
            "Cast" if attr_i(node, "to").is_some_and(|to| tensor::is_float(to as i32)) => {
                let x = input(node, 0);
                if let Some((shape, q)) = self.const_i32(x)? {
                    let data = q.into_iter().map(|v| v as f32).collect();
                    return Ok(Some(Value::new(x, shape, data)));
                }
                self.resolve(x, depth + 1)
            }
            "Transpose" => {
                let perm = node
                    .attribute
                    .iter()
                    .find(|a| a.name == "perm")
                    .map(|a| a.ints.as_slice());
                let Some(mut v) = self.resolve(input(node, 0), depth + 1)? else {
                    return Ok(None);
                };
                match (v.shape.as_slice(), perm) {
                    (&[rows, cols], None | Some([1, 0])) => {
                        v.data = ops::transpose2(&v.origin, &v.data, rows, cols)?;
                        v.shape = vec![cols, rows];
                        v.quant = None;
                        Ok(Some(v))
                    }
                    _ => Ok(None),
                }
            }
            "Mul" | "Sub" | "Add" | "Div" if self.is_const(name, 0) => {
                let (Some(a), Some(b)) = (
                    self.resolve(input(node, 0), depth + 1)?,
                    self.resolve(input(node, 1), depth + 1)?,
                ) else {
                    return Ok(None);
                };
                let op: fn(f32, f32) -> f32 = match node.op_type.as_str() {
                    "Mul" => |x, y| x * y,
                    "Sub" => |x, y| x - y,
                    "Add" => |x, y| x + y,
                    _ => |x, y| x / y,
                };
                let shape =
                    tensor::broadcast_shape(&a.shape, &b.shape).map_err(|r| node_err(node, r))?;
                self.room(
                    &format!("the output of node `{}`", node.name),
                    tensor::numel(&shape).ok(),
                )?;
                let (shape, data) = tensor::broadcast((&a.shape, &a.data), (&b.shape, &b.data), op)
                    .map_err(|r| node_err(node, r))?;
                // The bigger operand is the weight; the other its scale or zero point.
                let origin = if a.data.len() >= b.data.len() {
                    a.origin
                } else {
                    b.origin
                };
                Ok(Some(Value::new(&origin, shape, data)))
            }
            "DequantizeLinear" => {
                let x_name = input(node, 0);
                let Some((shape, x)) = self.const_i32(x_name)? else {
                    return Ok(None);
                };
                let scale = self
                    .resolve(input(node, 1), depth + 1)?
                    .ok_or_else(|| node_err(node, "scale is not a constant"))?;
                let zp = self.zero_point(input(node, 2))?;
                let axis = attr_i(node, "axis").unwrap_or(1);
                let block = attr_usize(node, "block_size", Some(0))?;
                let data = dequantize::dequantize_linear(
                    &x,
                    &shape,
                    &scale.data,
                    &scale.shape,
                    zp.as_deref(),
                    axis,
                    block,
                )
                .map_err(|r| node_err(node, r))?;
                Ok(Some(Value::new(x_name, shape, data)))
            }
            _ => Ok(None),
        }
    }
}
