import { $ } from './dom.js';

// Each tab's model: what to load by default. `weights`: the file whose size the page shows before
// the download starts. A model the user picks in the classification tab has task
// `classification`: a classifier, an NLI model or a sentence encoder (see `open`).
// MiniLM (classification and similarity tabs) ships as q8 (transformers.js's browser default,
// `onnx/model_quantized.onnx`) and f32 (`model.safetensors`); `#dtype` picks, `?dtype=fp32` preselects.
export const MINILM = {
  q8: { label: 'q8', weights: 'onnx/model_quantized.onnx' },
  fp32: { label: 'f32', weights: 'model.safetensors' },
};
export const minilm = (tab, dtype) => ({
  task: { cls: 'zero-shot-classification', sim: 'feature-extraction' }[tab],
  source: 'models/minilm/',
  dtype,
  weights: MINILM[dtype].weights,
  name: tab === 'cls'
    ? `models/minilm (${MINILM[dtype].label}), zero-shot by sentence similarity`
    : `models/minilm (all-MiniLM-L6-v2, ${MINILM[dtype].label})`,
});
if (new URLSearchParams(location.search).get('dtype') === 'fp32') $('#dtype').value = 'fp32';
// The MiniLM weights switch (dtype.js) replaces the cls and sim entries.
export const DEFAULTS = {
  ner: { task: 'token-classification', source: 'models/pii/', name: 'models/pii (Rampart PII, 4-bit ONNX)', weights: 'onnx/model_q4.onnx' },
  cls: minilm('cls', $('#dtype').value),
  qa: null,
  sim: minilm('sim', $('#dtype').value),
  pt: null, // the Similarity tab's "pre-training heads" section: the user's own checkpoint
};
