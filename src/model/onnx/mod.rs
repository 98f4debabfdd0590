//! Import BERT-family weights from an ONNX graph (transformers.js / optimum /
//! sentence-transformers exports: fp32, fp16, q8/int8/uint8 dynamic quantization, q4 / q4f16
//! `MatMulNBits`, bnb4 `MatMulBnb4`, weight-only `DequantizeLinear` or `Cast`+`Mul`) as f32
//! tensors with Hugging Face state-dict names and PyTorch layouts.
//!
//! Names come from the graph's structure, never from initializer names (`structure.rs`):
//! the walk starts at the embedding lookup of `input_ids`, follows the hidden state through
//! each layer (Q/K/V told apart by where they enter the attention products) and ends in the
//! task head. Weights are found as the constant operands of the nodes the walk reaches, seen
//! through their dequantization (`resolve.rs`, `ops.rs`, `embedding.rs`). A weight-carrying
//! node the walk does not explain is an error naming the node and its operator.

mod dequantize;
mod embedding;
mod facts;
mod ops;
mod proto;
mod resolve;
mod structure;
mod tensor;
mod wire;

use super::family::variant_name;
use super::family::ModelType;
use super::weights::Quant;
use proto::{GraphProto, ModelProto, NodeProto, TensorProto};
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use tensor::Reason;

/// A weight in PyTorch layout, named as in the Hugging Face state dict.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
    /// The integer codes behind `data`, for weights stored quantized (q4 blocks, q8 channels).
    pub quant: Option<Quant>,
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
    #[error("not a BERT-family encoder graph: {0}")]
    NoEncoder(String),
    #[error("unsupported graph: {0}")]
    Unsupported(String),
    #[error("tensors `{first}` and `{second}` both map to weight name `{name}`")]
    DuplicateName {
        name: String,
        first: String,
        second: String,
    },
    #[error("{what} would take {}, more than the memory budget of {}", crate::byte_sizes::show(*.needs), crate::byte_sizes::show(Some(*.budget)))]
    Budget {
        what: String,
        needs: Option<u64>,
        budget: u64,
    },
}

/// Decodes an ONNX model and returns its weights, dequantized to f32, named as a BERT
/// checkpoint (`bert.` prefix, BERT module names).
pub fn import_onnx(bytes: &[u8]) -> Result<Vec<ImportedTensor>, OnnxError> {
    import_onnx_as(bytes, ModelType::Bert)
}

/// As [`import_onnx`], with the module names of the given model family.
pub fn import_onnx_as(bytes: &[u8], family: ModelType) -> Result<Vec<ImportedTensor>, OnnxError> {
    import_onnx_within(bytes, family, super::budget::DEFAULT)
}

/// As [`import_onnx_as`], within a memory budget: the decoded protobuf (measured on the wire
/// before decoding), each constant as it is dequantized, and the imported weights in all must
/// each fit in `budget` bytes.
pub fn import_onnx_within(
    bytes: &[u8],
    family: ModelType,
    budget: u64,
) -> Result<Vec<ImportedTensor>, OnnxError> {
    walk_within(bytes, family, budget).map(|(tensors, _)| tensors)
}

/// As [`import_onnx_within`], with what the graph computes besides weights.
fn walk_within(
    bytes: &[u8],
    family: ModelType,
    budget: u64,
) -> Result<(Vec<ImportedTensor>, facts::GraphFacts), OnnxError> {
    if let Some(heap) = wire::decoded_heap(bytes) {
        if heap > budget {
            return Err(OnnxError::Budget {
                what: "the decoded ONNX graph".into(),
                needs: Some(heap),
                budget,
            });
        }
    }
    let model = <ModelProto as prost::Message>::decode(bytes)?;
    let graph = model.graph.as_ref().ok_or(OnnxError::NoGraph)?;
    let mut importer = Importer::new(graph)?;
    importer.budget = budget;
    importer.check_ops(graph)?;
    structure::walk(importer, graph, family)
}

/// Shape and values of an integer constant.
type IntTensor = (Vec<usize>, Vec<i32>);

/// A float constant as resolved from a node input; `origin` names the underlying initializer.
struct Value {
    origin: String,
    shape: Vec<usize>,
    data: Vec<f32>,
    quant: Option<Quant>,
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
    /// Weight name → the initializer it came from.
    origins: HashMap<String, String>,
    /// Nodes (by first output) whose weights were taken by the walk.
    visited: HashSet<String>,
    budget: u64,
    /// Bytes of `out`.
    held: Cell<u64>,
    /// The encoder layer being walked, if any.
    layer: Option<usize>,
    /// A shared module's weight name → the copy (in `out`) the current layer reads.
    variant: HashMap<String, usize>,
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

fn output(node: &NodeProto) -> &str {
    node.output.first().map_or("", String::as_str)
}

fn attr_i(node: &NodeProto, name: &str) -> Option<i64> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

fn attr_ints<'n>(node: &'n NodeProto, name: &str) -> Option<&'n [i64]> {
    (node.attribute.iter().find(|a| a.name == name)).map(|a| a.ints.as_slice())
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
            visited: HashSet::new(),
            budget: super::budget::DEFAULT,
            held: Cell::new(0),
            layer: None,
            variant: HashMap::new(),
        })
    }

    /// onnxruntime fusions and quantized operators this importer cannot take apart are an
    /// error up front, named, rather than an unexplained structure later.
    fn check_ops(&self, graph: &GraphProto) -> Result<(), OnnxError> {
        for node in &graph.node {
            let op = node.op_type.as_str();
            let known = matches!(
                op,
                "MatMulNBits"
                    | "MatMulBnb4"
                    | "MatMulIntegerToFloat"
                    | "GatherBlockQuantized"
                    | "Gelu"
                    | "FastGelu"
                    | "QuickGelu"
            );
            let unsupported = (is_ms(node) && !known)
                || (is_std(node) && matches!(op, "QLinearMatMul" | "ConvInteger" | "QLinearConv"));
            if unsupported && self.takes_weights(node) {
                return Err(OnnxError::UnsupportedOp {
                    node: node.name.clone(),
                    op: op.to_string(),
                });
            }
        }
        Ok(())
    }

    fn takes_weights(&self, node: &NodeProto) -> bool {
        node.input.iter().any(|i| {
            let numel = |t: &TensorProto| tensor::shape(t).and_then(|s| tensor::numel(&s));
            self.consts
                .get(i.as_str())
                .is_some_and(|t| numel(t).map_or(true, |n| n > 1))
        })
    }

    /// An error unless `values` more f32 values (`what`) fit in the budget beside the weights
    /// imported so far.
    fn room(&self, what: &str, values: Option<usize>) -> Result<(), OnnxError> {
        let needs = values
            .and_then(|n| super::budget::bytes_of(n, 4))
            .and_then(|b| b.checked_add(self.held.get()));
        match needs {
            Some(n) if n <= self.budget => Ok(()),
            needs => Err(OnnxError::Budget {
                what: format!("{what} as f32, with the weights imported before it,"),
                needs,
                budget: self.budget,
            }),
        }
    }

    /// Records a weight under its state-dict name. A name met again (a module that every
    /// layer shares, as ALBERT's) is recorded once: from the same initializer, or from another
    /// holding the same values. The same weight stored otherwise (quantized in one layer, f32
    /// in the next, as onnxruntime's quantizers leave weights shared through `Identity`) is
    /// kept as the file has it: within the encoder, a copy `{name}#{i}` that layer `i` and
    /// the layers after it read (see [`variant_name`]); elsewhere, the f32 values.
    fn push(&mut self, name: String, v: Value) -> Result<(), OnnxError> {
        if let (Some(i), Some(&at)) = (self.layer, self.variant.get(&name)) {
            let current = &self.out[at];
            let first = self.origins.get(&current.name).cloned().unwrap_or_default();
            if first == v.origin {
                return Ok(());
            }
            return match same_weight(current, &v) {
                Same::Equal => Ok(()),
                Same::KeepFirst | Same::KeepSecond => {
                    self.variant.insert(name.clone(), self.out.len());
                    self.record(variant_name(&name, i), v)
                }
                Same::Differ => Err(OnnxError::DuplicateName {
                    name,
                    first,
                    second: v.origin,
                }),
            };
        }
        if let Some(first) = self.origins.get(&name) {
            if *first == v.origin {
                return Ok(());
            }
            if let Some(i) = self.out.iter().position(|t| t.name == name) {
                match same_weight(&self.out[i], &v) {
                    Same::Equal | Same::KeepFirst => return Ok(()),
                    Same::KeepSecond => {
                        (self.out[i].data, self.out[i].quant) = (v.data, None);
                        self.origins.insert(name, v.origin);
                        return Ok(());
                    }
                    Same::Differ => {}
                }
            }
            return Err(OnnxError::DuplicateName {
                name,
                first: first.clone(),
                second: v.origin,
            });
        }
        if self.layer.is_some() {
            self.variant.insert(name.clone(), self.out.len());
        }
        self.record(name, v)
    }

    fn record(&mut self, name: String, v: Value) -> Result<(), OnnxError> {
        self.room(&name, Some(v.data.len()))?;
        self.held.set(self.held.get() + 4 * v.data.len() as u64);
        self.origins.insert(name.clone(), v.origin);
        self.out.push(ImportedTensor {
            name,
            shape: v.shape,
            data: v.data,
            quant: v.quant,
        });
        Ok(())
    }

    fn tensor_f32(&self, name: &str, t: &TensorProto) -> Result<Value, OnnxError> {
        let shape = tensor::shape(t).map_err(tensor_err(name))?;
        self.room(&format!("tensor `{name}`"), tensor::numel(&shape).ok())?;
        let data = tensor::to_f32(t).map_err(tensor_err(name))?;
        Ok(Value::new(name, shape, data))
    }

    fn const_i32(&self, name: &str) -> Result<Option<IntTensor>, OnnxError> {
        match self.consts.get(name) {
            Some(t) if tensor::is_int(t.data_type) => {
                let shape = tensor::shape(t).map_err(tensor_err(name))?;
                self.room(&format!("tensor `{name}`"), tensor::numel(&shape).ok())?;
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

    /// Whether `name` is computed from constants only (a weight, possibly behind its
    /// dequantization), without decoding anything.
    fn is_const(&self, name: &str, depth: usize) -> bool {
        if self.consts.contains_key(name) {
            return true;
        }
        match self.producer.get(name) {
            Some(n) if depth < 16 && n.op_type != "Shape" => n
                .input
                .iter()
                .filter(|i| !i.is_empty())
                .all(|i| self.is_const(i, depth + 1)),
            _ => false,
        }
    }
}

/// How a weight met a second time under a name relates to the one recorded first.
#[derive(Debug, PartialEq)]
enum Same {
    Equal,
    KeepFirst,
    KeepSecond,
    Differ,
}

/// Whether `second` holds the weight already recorded as `first`: the same values, or one of
/// the two stored quantized (with its codes) and the other in f32 within one quantization step
/// of it everywhere (half a step of rounding, or a whole one where symmetric q4 clamps its
/// largest positive value from 8 to 7). onnxruntime's quantizers quantize an initializer only where a node
/// reads it directly, so an export that shares one layer's weights through `Identity` nodes
/// (ALBERT from torch.onnx) comes out with the first layer quantized and the others in f32;
/// one weight serves every layer here, and the f32 one is kept.
fn same_weight(first: &ImportedTensor, second: &Value) -> Same {
    if first.shape != second.shape {
        return Same::Differ;
    }
    if first.data == second.data {
        return Same::Equal;
    }
    // The quantized weight, its values, the f32 values, and which to keep (the f32 one).
    let (quantized, values, plain, keep) = match (&first.quant, &second.quant) {
        (Some(q), None) => (q, &first.data, &second.data, Same::KeepSecond),
        (None, Some(q)) => (q, &second.data, &first.data, Same::KeepFirst),
        _ => return Same::Differ,
    };
    let k = first.shape.last().copied().unwrap_or(1).max(1);
    let step = |i: usize| -> Option<f32> {
        let (row, col) = (i / k, i % k);
        match quantized {
            Quant::Channel(c) => c.scales.get(row).copied(),
            Quant::Block(b) => b
                .scales
                .get(row * b.blocks(k) + col / b.block.max(1))
                .copied(),
        }
    };
    let close = (values.iter().zip(plain).enumerate()).all(|(i, (&q, &p))| {
        step(i).is_some_and(|s| (q - p).abs() <= s.abs() * 1.001 + 1e-6 * p.abs())
    });
    if close && values.len() == plain.len() {
        keep
    } else {
        Same::Differ
    }
}

#[cfg(test)]
mod tests;

/// Imports an ONNX file's weights (BERT names) into the tensor store the plan is built from.
pub fn import(file: &str, bytes: &[u8]) -> crate::Result<super::Weights> {
    import_as(file, bytes, ModelType::Bert)
}

/// Imports an ONNX file's weights with the module names of `family` (from `config.json`).
pub fn import_as(file: &str, bytes: &[u8], family: ModelType) -> crate::Result<super::Weights> {
    import_within(file, bytes, family, super::budget::DEFAULT)
}

/// As [`import_as`], within a memory budget (see [`import_onnx_within`]).
pub fn import_within(
    file: &str,
    bytes: &[u8],
    family: ModelType,
    budget: u64,
) -> crate::Result<super::Weights> {
    import_for(file, bytes, family, None, budget)
}

/// As [`import_within`] for the model `cfg` describes: what the graph computes that the
/// config also says (rotary frequencies, sliding windows, the head's pooling) must agree.
pub fn import_checked(
    file: &str,
    bytes: &[u8],
    cfg: &super::ModelConfig,
    budget: u64,
) -> crate::Result<super::Weights> {
    import_for(file, bytes, cfg.model_type, Some(cfg), budget)
}

fn import_for(
    file: &str,
    bytes: &[u8],
    family: ModelType,
    cfg: Option<&super::ModelConfig>,
    budget: u64,
) -> crate::Result<super::Weights> {
    let (tensors, facts) = walk_within(bytes, family, budget).map_err(|e| match e {
        OnnxError::Budget {
            what,
            needs,
            budget,
        } => crate::Error::Budget {
            what: format!("{file}: {what}"),
            needs,
            budget,
        },
        e => crate::Error::Onnx {
            file: file.to_string(),
            msg: e.to_string(),
        },
    })?;
    if let Some(cfg) = cfg {
        facts.check(cfg).map_err(|msg| crate::Error::Onnx {
            file: file.to_string(),
            msg: format!("the graph disagrees with config.json: {msg}"),
        })?;
    }
    let mut w = super::Weights::default();
    for t in tensors {
        let mut tensor = super::Tensor::new(t.shape, t.data);
        tensor.quant = t.quant.map(Box::new);
        w.insert(t.name, tensor);
    }
    Ok(w)
}
