// `pipeline()`'s options checked before anything loads: webert's own names, transformers.js's
// names where they mean something here (translated), and an error naming any other key, so that
// a misspelt option does not pass silently.

import { env } from './env.js';
import { isNode } from './platform.js';

const OWN = new Set([
  'device', 'quantized', 'memoryBudget', 'gpuWeights', 'gpuTilings', 'allowFallbackAdapter', 'probe', 'worker',
  'threads', 'onProgress', 'progress_callback', 'signal', 'sha256', 'dtype', 'revision', 'weights', 'cache',
  'downloadTimeout', 'head', 'packedCache',
]);

/** transformers.js options webert has no counterpart for, and why. */
const FOREIGN = {
  session_options: 'webert does not run ONNX Runtime, so it has no session options',
  config: 'webert reads config.json from the model itself',
  use_external_data_format: 'webert reads the weights from the .onnx file itself, not external data files',
};

/** transformers.js's device names that mean one of webert's. */
const DEVICES = { wasm: 'cpu', gpu: 'webgpu' };

/** transformers.js's file name suffix of each dtype (`onnx/{model_file_name}{suffix}.onnx`). */
const SUFFIX = { fp32: '', fp16: '_fp16', q8: '_quantized', int8: '_int8', uint8: '_uint8', q4: '_q4', q4f16: '_q4f16', bnb4: '_bnb4' };

function closest(key) {
  const distance = (a, b) => {
    const d = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      let prev = d[0];
      d[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const here = d[j];
        d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
        prev = here;
      }
    }
    return d[b.length];
  };
  const [best] = [...OWN, 'local_files_only', 'model_file_name', 'subfolder', 'cache_dir'].map((k) => [k, distance(key.toLowerCase(), k.toLowerCase())]).sort((a, b) => a[1] - b[1]);
  return best[1] <= 2 ? ` (did you mean \`${best[0]}\`?)` : '';
}

/**
 * The options webert uses, from the caller's: transformers.js's names translated
 * (`device: 'wasm' | 'gpu'`, `local_files_only`, `model_file_name` + `subfolder`, `cache_dir`), `env`'s
 * defaults filled in (`useBrowserCache`, `backends.onnx.wasm.numThreads`); anything else is an
 * error naming the option.
 */
export function pipelineOptions(options) {
  if (options == null) return {};
  if (typeof options !== 'object') throw new TypeError(`pipeline options must be an object, got ${typeof options}`);
  const out = {};
  let fileName = null;
  let subfolder = 'onnx';
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    if (OWN.has(key)) out[key] = value;
    else if (key === 'local_files_only') out.localOnly = !!value;
    else if (key === 'model_file_name') fileName = String(value);
    else if (key === 'subfolder') subfolder = String(value).replace(/^\/+|\/+$/g, '');
    else if (key === 'cache_dir') {
      if (!isNode) throw new Error('pipeline option `cache_dir` is for Node; a browser keeps downloads in the Cache API (`cache: false` turns it off)');
      out.cacheDir = String(value);
    }
    else if (key in FOREIGN) throw new Error(`pipeline option \`${key}\` is transformers.js's, and ${FOREIGN[key]}; leave it out`);
    else throw new Error(`unknown pipeline option \`${key}\`${closest(key)}; see PipelineOptions in webert.d.ts`);
  }
  if (typeof out.device === 'string' && out.device in DEVICES) out.device = DEVICES[out.device];
  if (out.dtype === 'auto') delete out.dtype; // transformers.js's name for the default choice
  if (fileName != null || subfolder !== 'onnx') {
    if (out.weights != null) throw new Error('give either `weights` or transformers.js\'s `model_file_name` / `subfolder`, not both');
    const dtype = out.dtype ?? 'fp32';
    if (!(dtype in SUFFIX)) throw new Error(`model_file_name needs a dtype of ${Object.keys(SUFFIX).join(', ')}, got ${dtype}`);
    out.weights = `${subfolder ? `${subfolder}/` : ''}${fileName ?? 'model'}${SUFFIX[dtype]}.onnx`;
  }
  if (out.cache === undefined && env.useBrowserCache === false) out.cache = false;
  const threads = env.backends?.onnx?.wasm?.numThreads;
  if (out.threads === undefined && Number.isInteger(threads) && threads > 0) out.threads = threads;
  return out;
}
