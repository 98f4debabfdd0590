//! One error type for the whole crate: every variant names the file, tensor or input at fault.

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("model folder {0} has no weights: expected model.safetensors, *.safetensors shards or onnx/model*.onnx")]
    NoWeights(String),
    #[error("{file}: {msg}")]
    Config { file: String, msg: String },
    /// The `model_type`, and the names webert reads.
    #[error("unsupported model_type `{0}`; supported: {1}")]
    UnsupportedModelType(String, String),
    #[error("unsupported architecture `{0}`; supported: *Model, *ForSequenceClassification, *ForTokenClassification, *ForQuestionAnswering, *ForMaskedLM, BertForNextSentencePrediction, BertForPreTraining")]
    UnsupportedArchitecture(String),
    #[error("missing tensor `{0}` in the weights")]
    MissingTensor(String),
    #[error("tensor `{name}` has shape {got:?}, expected {expected:?}")]
    TensorShape {
        name: String,
        got: Vec<usize>,
        expected: Vec<usize>,
    },
    #[error("{file}: corrupt or unsupported safetensors: {msg}")]
    Safetensors { file: String, msg: String },
    #[error("{file}: ONNX import failed: {msg}")]
    Onnx { file: String, msg: String },
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("invalid input: {0}")]
    Input(String),
    #[error("GPU: {0}")]
    Gpu(GpuError),
    #[error("the call was cancelled")]
    Cancelled,
    #[error("the model has no {0} head; its architecture is {1}")]
    WrongHead(&'static str, String),
    #[error("this classifier head was trained on {head}; the model is {model}")]
    WrongEncoder { head: String, model: String },
    /// Refused before allocating: see `model::budget`.
    #[error("{what} would take {}, more than the memory budget of {} (raise it: LoadOptions::memory_budget, WEBERT_MEMORY_BUDGET, or the package's `memoryBudget` option)", crate::byte_sizes::show(*.needs), crate::byte_sizes::show(Some(*.budget)))]
    Budget {
        what: String,
        /// `None`: past 2^64 bytes.
        needs: Option<u64>,
        budget: u64,
    },
    /// An allocation within the budget failed (wasm's `memory.grow`, the process's limit): the
    /// call fails, the engine stays usable.
    #[error("out of memory allocating {what} ({})", crate::byte_sizes::show(Some(*.bytes)))]
    OutOfMemory { what: String, bytes: u64 },
}

impl Error {
    pub(crate) fn config(file: &str, msg: impl Into<String>) -> Self {
        Error::Config {
            file: file.to_string(),
            msg: msg.into(),
        }
    }
}

/// A GPU failure, typed so that the engine can tell a device it must give up from a call it
/// only has to run elsewhere.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg}")]
pub struct GpuError {
    pub kind: GpuErrorKind,
    pub msg: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuErrorKind {
    /// No usable adapter or device, or one without a feature that was required.
    Unavailable,
    /// The device was lost (driver reset, destroyed); nothing on it can be used again.
    DeviceLost,
    OutOfMemory,
    /// wgpu rejected a command: a bug of ours, or an adapter that misbehaves.
    Validation,
    /// The GPU executor cannot run this shape (a sequence past the attention shader's limit,
    /// activations past the binding limit); the device is fine and other calls may use it.
    UnsupportedShape,
    /// Something else went wrong on the way (a failed readback, a missing pipeline).
    Internal,
}

impl GpuErrorKind {
    /// Whether the device stays usable for later calls after this error.
    pub fn keeps_device(self) -> bool {
        self == GpuErrorKind::UnsupportedShape
    }
}

impl Error {
    pub(crate) fn gpu(kind: GpuErrorKind, msg: impl Into<String>) -> Self {
        Error::Gpu(GpuError {
            kind,
            msg: msg.into(),
        })
    }

    /// The GPU failure's kind, when this is one.
    pub fn gpu_kind(&self) -> Option<GpuErrorKind> {
        match self {
            Error::Gpu(g) => Some(g.kind),
            _ => None,
        }
    }
}

/// Parses a name from a request or flag (`"first"`, `"webgpu"`) into its enum, with an error
/// that lists the names there are.
pub fn parse_name<T: serde::de::DeserializeOwned>(what: &str, name: &str) -> Result<T> {
    use serde::de::IntoDeserializer;
    let de: serde::de::value::StrDeserializer<serde::de::value::Error> = name.into_deserializer();
    T::deserialize(de).map_err(|e| {
        let e = e.to_string().replace("unknown variant", "unknown value");
        Error::Input(format!("{what}: {e}"))
    })
}
