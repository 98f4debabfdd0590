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
    #[error(
        "unsupported model_type `{0}`; supported: bert, distilbert, roberta, xlm-roberta, electra"
    )]
    UnsupportedModelType(String),
    #[error("unsupported architecture `{0}`; supported: *Model, *ForSequenceClassification, *ForTokenClassification, *ForQuestionAnswering, *ForMaskedLM")]
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
    Gpu(String),
    #[error("the model has no {0} head; its architecture is {1}")]
    WrongHead(&'static str, String),
}

impl Error {
    pub(crate) fn config(file: &str, msg: impl Into<String>) -> Self {
        Error::Config {
            file: file.to_string(),
            msg: msg.into(),
        }
    }
}
