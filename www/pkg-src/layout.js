// Generated from src/model/files.rs by `WEBERT_BLESS=1 cargo test --test task_table`;
// do not edit.

/**
 * The files of a model folder the engine reads (`modelFiles()` of the module): `required`,
 * `text` (read when present), `weights` in the engine's order of preference, `dtypes`
 * (`{ dtype: file }`).
 */
export const LAYOUT = {"dtypes":{"bnb4":"onnx/model_bnb4.onnx","fp16":"onnx/model_fp16.onnx","fp32":"onnx/model.onnx","int8":"onnx/model_int8.onnx","q4":"onnx/model_q4.onnx","q4f16":"onnx/model_q4f16.onnx","q8":"onnx/model_quantized.onnx","uint8":"onnx/model_uint8.onnx"},"required":["config.json","tokenizer.json"],"text":["config.json","tokenizer.json","tokenizer_config.json"],"weights":["model.safetensors","onnx/model.onnx","onnx/model_fp16.onnx","onnx/model_quantized.onnx","onnx/model_int8.onnx","onnx/model_uint8.onnx","onnx/model_q4.onnx","onnx/model_q4f16.onnx","onnx/model_bnb4.onnx"]};
