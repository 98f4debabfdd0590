//! Import BERT-family weights from an ONNX graph (transformers.js / optimum exports,
//! fp32, fp16, q4 `MatMulNBits`, q8 `MatMulInteger` and QDQ `DequantizeLinear`) as f32
//! tensors with Hugging Face PyTorch state-dict names and layouts.
//!
//! Which constants are weights: a float constant (possibly behind Identity, Cast,
//! 2-D Transpose or DequantizeLinear) is kept only when consumed as
//! * the B input of MatMul / Gemm (and Gemm's C), or the quantized weight of MatMulNBits,
//!   MatMulInteger, MatMulIntegerToFloat → `<scope>.weight` `[out, in]` (+ `.bias`);
//! * the data of Gather / GatherBlockQuantized with rank ≥ 2 (an integer table followed
//!   by DequantizeLinear is dequantized too) → `<scope>.weight`;
//! * the scale / bias of LayerNormalization → `.weight` / `.bias`;
//! * an input of Add (→ `.bias`) or Mul (→ `.weight`, decomposed LayerNorm) with rank ≥ 1
//!   and either more than one element or a state-dict name. This leaves out scalars
//!   (GELU, attention scaling, LayerNorm epsilon) and integer shape/index constants.
//!
//! Other weight-carrying operators (onnxruntime fusions such as Attention,
//! SkipLayerNormalization, MatMulBnb4; QLinearMatMul) are an error, not silently skipped.
//!
//! Names: a constant already named like a state-dict key (`bert.encoder.layer.0.output.dense.bias`,
//! minus a `_quantized` / `_Q4` suffix) keeps it; anonymous ones (`onnx::MatMul_743_Q4`) take
//! the consuming node's scope (`/bert/encoder/layer.0/attention/self/query/MatMul_Q4` →
//! `bert.encoder.layer.0.attention.self.query`), else their own name.

mod ops;
mod proto;
mod tensor;

use super::weights::BlockQuant;
use proto::{GraphProto, ModelProto, NodeProto, TensorProto};
use std::collections::HashMap;
use tensor::Reason;

/// A weight in PyTorch layout, named as in the Hugging Face state dict.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
    /// The integer codes behind `data`, for weights stored block-quantized.
    pub quant: Option<BlockQuant>,
}

#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    #[error("not a valid ONNX model: {0}")]
    Decode(#[from] prost::DecodeError),
    #[error("ONNX model has no graph")]
    NoGraph,
    #[error("tensor `{0}` uses external data, which is not supported: export with the weights inside the .onnx file")]
    ExternalData(String),
    #[error("tensor `{tensor}`: {reason}")]
    Tensor { tensor: String, reason: String },
    #[error("node `{node}` ({op}): {reason}")]
    Node {
        node: String,
        op: String,
        reason: String,
    },
    #[error("node `{node}`: operator {op} takes weights but is not supported (export without onnxruntime graph fusions)")]
    UnsupportedOp { node: String, op: String },
    #[error("tensors `{first}` and `{second}` both map to weight name `{name}`")]
    DuplicateName {
        name: String,
        first: String,
        second: String,
    },
}

/// Decodes an ONNX model and returns its weights, dequantized to f32, in graph order.
pub fn import_onnx(bytes: &[u8]) -> Result<Vec<ImportedTensor>, OnnxError> {
    let model = <ModelProto as prost::Message>::decode(bytes)?;
    let graph = model.graph.as_ref().ok_or(OnnxError::NoGraph)?;
    Importer::new(graph)?.run(graph)
}

#[derive(Clone, Copy)]
enum Kind {
    Weight,
    Bias,
}

/// Shape and values of an integer constant.
type IntTensor = (Vec<usize>, Vec<i32>);

/// A float constant as resolved from a node input; `origin` names the underlying initializer.
struct Value {
    origin: String,
    shape: Vec<usize>,
    data: Vec<f32>,
    quant: Option<BlockQuant>,
}

impl Value {
    fn new(origin: &str, shape: Vec<usize>, data: Vec<f32>) -> Self {
        let origin = origin.to_string();
        Self {
            origin,
            shape,
            data,
            quant: None,
        }
    }
}

struct Importer<'a> {
    consts: HashMap<&'a str, &'a TensorProto>,
    producer: HashMap<&'a str, &'a NodeProto>,
    consumers: HashMap<&'a str, Vec<&'a NodeProto>>,
    out: Vec<ImportedTensor>,
    origins: HashMap<String, String>,
}

fn tensor_err(tensor: &str) -> impl FnOnce(Reason) -> OnnxError + '_ {
    move |reason| OnnxError::Tensor {
        tensor: tensor.to_string(),
        reason,
    }
}

fn node_err(node: &NodeProto, reason: impl Into<String>) -> OnnxError {
    OnnxError::Node {
        node: node.name.clone(),
        op: node.op_type.clone(),
        reason: reason.into(),
    }
}

fn input(node: &NodeProto, i: usize) -> &str {
    node.input.get(i).map_or("", String::as_str)
}

fn attr_i(node: &NodeProto, name: &str) -> Option<i64> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

fn attr_usize(node: &NodeProto, name: &str, default: Option<i64>) -> Result<usize, OnnxError> {
    let v = attr_i(node, name)
        .or(default)
        .ok_or_else(|| node_err(node, format!("missing attribute `{name}`")))?;
    usize::try_from(v).map_err(|_| node_err(node, format!("attribute `{name}` = {v} is invalid")))
}

fn is_std(node: &NodeProto) -> bool {
    node.domain.is_empty() || node.domain == "ai.onnx"
}

fn is_ms(node: &NodeProto) -> bool {
    node.domain == "com.microsoft"
}

/// `a.b_c.weight`-style names: dotted identifier segments only.
fn is_state_dict_name(s: &str) -> bool {
    s.contains('.')
        && s.split('.').all(|seg| {
            !seg.is_empty() && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

fn strip_quant_suffix(s: &str) -> &str {
    if let Some(base) = s.strip_suffix("_quantized") {
        return base;
    }
    match s.rsplit_once("_Q") {
        Some((base, bits)) if !bits.is_empty() && bits.chars().all(|c| c.is_ascii_digit()) => base,
        _ => s,
    }
}

fn param_name(origin: &str, node: &NodeProto, kind: Kind) -> String {
    let base = strip_quant_suffix(origin);
    if is_state_dict_name(base) {
        return base.to_string();
    }
    let scope = node
        .name
        .strip_prefix('/')
        .and_then(|p| p.rsplit_once('/'))
        .map(|(scope, _op)| scope);
    match scope {
        Some(scope) if !scope.is_empty() => {
            let suffix = match kind {
                Kind::Weight => "weight",
                Kind::Bias => "bias",
            };
            format!("{}.{suffix}", scope.replace('/', "."))
        }
        _ => origin.to_string(),
    }
}

impl<'a> Importer<'a> {
    fn new(graph: &'a GraphProto) -> Result<Self, OnnxError> {
        let mut consts = HashMap::new();
        for t in &graph.initializer {
            if t.data_location == 1 || !t.external_data.is_empty() {
                return Err(OnnxError::ExternalData(t.name.clone()));
            }
            consts.insert(t.name.as_str(), t);
        }
        let mut producer = HashMap::new();
        let mut consumers: HashMap<&str, Vec<&NodeProto>> = HashMap::new();
        for node in &graph.node {
            for out in &node.output {
                producer.insert(out.as_str(), node);
            }
            for inp in node.input.iter().filter(|i| !i.is_empty()) {
                consumers.entry(inp.as_str()).or_default().push(node);
            }
            if is_std(node) && node.op_type == "Constant" {
                let value = node
                    .attribute
                    .iter()
                    .find(|a| a.name == "value")
                    .and_then(|a| a.t.as_ref());
                if let (Some(t), Some(out)) = (value, node.output.first()) {
                    consts.insert(out.as_str(), t);
                }
            }
        }
        Ok(Self {
            consts,
            producer,
            consumers,
            out: Vec::new(),
            origins: HashMap::new(),
        })
    }

    fn run(mut self, graph: &'a GraphProto) -> Result<Vec<ImportedTensor>, OnnxError> {
        for node in &graph.node {
            self.visit(node)?;
        }
        Ok(self.out)
    }

    fn visit(&mut self, node: &'a NodeProto) -> Result<(), OnnxError> {
        match (node.op_type.as_str(), is_std(node), is_ms(node)) {
            ("MatMul", true, _) => {
                if let Some(w) = self
                    .resolve(input(node, 1), 0)?
                    .filter(|w| w.shape.len() == 2)
                {
                    self.push_linear(node, w, false)?;
                }
            }
            ("Gemm", true, _) => self.gemm(node)?,
            ("MatMulNBits", _, true) => self.matmul_nbits(node)?,
            ("MatMulInteger", true, _) | ("MatMulIntegerToFloat", _, true) => {
                self.matmul_integer(node)?
            }
            ("Gather", true, _) => self.gather(node)?,
            ("GatherBlockQuantized", _, true) => self.gather_block_quantized(node)?,
            ("LayerNormalization", true, _) => {
                for (i, kind) in [(1, Kind::Weight), (2, Kind::Bias)] {
                    if let Some(v) = self.resolve(input(node, i), 0)? {
                        self.push(node, kind, v)?;
                    }
                }
            }
            ("Add" | "Mul", true, _) => {
                let kind = if node.op_type == "Add" {
                    Kind::Bias
                } else {
                    Kind::Weight
                };
                for i in 0..node.input.len() {
                    if let Some(v) = self.resolve(input(node, i), 0)? {
                        let named = is_state_dict_name(strip_quant_suffix(&v.origin));
                        if !v.shape.is_empty() && (v.data.len() > 1 || named) {
                            self.push(node, kind, v)?;
                        }
                    }
                }
            }
            (op, std, ms)
                if ms || (std && matches!(op, "QLinearMatMul" | "ConvInteger" | "QLinearConv")) =>
            {
                let takes_weights = node.input.iter().any(|i| {
                    let numel = |t: &TensorProto| tensor::shape(t).and_then(|s| tensor::numel(&s));
                    self.consts
                        .get(i.as_str())
                        .is_some_and(|t| numel(t).map_or(true, |n| n > 1))
                });
                if takes_weights {
                    return Err(OnnxError::UnsupportedOp {
                        node: node.name.clone(),
                        op: op.to_string(),
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn push(&mut self, node: &NodeProto, kind: Kind, v: Value) -> Result<(), OnnxError> {
        let name = param_name(&v.origin, node, kind);
        if let Some(first) = self.origins.get(&name) {
            if *first == v.origin {
                return Ok(()); // same constant reached again (shared weight)
            }
            return Err(OnnxError::DuplicateName {
                name,
                first: first.clone(),
                second: v.origin,
            });
        }
        self.origins.insert(name.clone(), v.origin);
        self.out.push(ImportedTensor {
            name,
            shape: v.shape,
            data: v.data,
            quant: v.quant,
        });
        Ok(())
    }

    /// Pushes a linear weight, transposing ONNX's `[in, out]` unless `out_in` already holds.
    fn push_linear(
        &mut self,
        node: &NodeProto,
        mut w: Value,
        out_in: bool,
    ) -> Result<(), OnnxError> {
        if let (false, &[rows, cols]) = (out_in, w.shape.as_slice()) {
            w.data = tensor::transpose2(&w.data, rows, cols);
            w.shape = vec![cols, rows];
            w.quant = None; // blocks run along the other axis now
        }
        self.push(node, Kind::Weight, w)
    }

    fn tensor_f32(&self, name: &str, t: &TensorProto) -> Result<Value, OnnxError> {
        let shape = tensor::shape(t).map_err(tensor_err(name))?;
        let data = tensor::to_f32(t).map_err(tensor_err(name))?;
        Ok(Value::new(name, shape, data))
    }

    fn const_i32(&self, name: &str) -> Result<Option<IntTensor>, OnnxError> {
        match self.consts.get(name) {
            Some(t) if tensor::is_int(t.data_type) => {
                let shape = tensor::shape(t).map_err(tensor_err(name))?;
                Ok(Some((shape, tensor::to_i32(t).map_err(tensor_err(name))?)))
            }
            _ => Ok(None),
        }
    }

    fn zero_point(&self, name: &str) -> Result<Option<Vec<f32>>, OnnxError> {
        Ok(self
            .const_i32(name)?
            .map(|(_, z)| z.into_iter().map(|v| v as f32).collect()))
    }

    /// A float constant behind `name`: an initializer / Constant, or one seen through
    /// Identity, Cast, 2-D Transpose or DequantizeLinear of a constant.
    fn resolve(&self, name: &str, depth: usize) -> Result<Option<Value>, OnnxError> {
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
                self.resolve(input(node, 0), depth + 1)
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
                        v.data = tensor::transpose2(&v.data, rows, cols);
                        v.shape = vec![cols, rows];
                        Ok(Some(v))
                    }
                    _ => Ok(None),
                }
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
                let data = tensor::dequantize_linear(
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

#[cfg(test)]
mod tests;

/// Imports an ONNX file's weights into the tensor store the plan is built from.
pub fn import(file: &str, bytes: &[u8]) -> crate::Result<super::Weights> {
    let tensors = import_onnx(bytes).map_err(|e| crate::Error::Onnx {
        file: file.to_string(),
        msg: e.to_string(),
    })?;
    let mut w = super::Weights::default();
    for t in tensors {
        let mut tensor = super::Tensor::new(t.shape, t.data);
        tensor.quant = t.quant.map(|q| Box::new(super::Quant::Block(q)));
        w.insert(t.name, tensor);
    }
    Ok(w)
}
