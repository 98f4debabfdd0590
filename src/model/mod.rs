//! Model description: config, weights (safetensors, ONNX import) and the plan both executors run.

pub mod activation;
pub mod budget;
pub mod config;
pub mod family;
pub mod plan;
pub mod positions;
pub mod sentence;
pub mod synthetic;
pub mod weights;

pub use activation::Activation;
pub use config::{Architecture, HeadKind, ModelConfig};
pub use family::ModelType;
pub use plan::{
    BufId, BufferSpec, Disentangled, DistanceTable, Head, Linear, Norm, Op, Plan, Rotation, Rows,
    StoredPlan, WeightId, WeightUse,
};
pub use weights::{BlockQuant, ChannelQuant, Quant, Tensor, Weights};
pub mod tokenizer;
mod tokenizer_json;
pub use tokenizer::{TextTokenizer, Windowing};
pub mod files;
pub mod onnx;
pub use files::ModelFiles;
