// webert: `await pipeline(task, model, options)` for BERT-family encoders, on WebGPU or
// WebAssembly SIMD.
// In browsers the model lives in a module worker (the page never freezes); in Node, or with
// `worker: false`, it runs in the calling thread.

import { clearCache } from './files.js';
import { HOST } from './host.js';
import { laneRequest } from './lane.js';
import { webgpuAdapter } from './runtime.js';
import { ENTRY, acquire, release } from './sharing.js';
import { readHead, teach } from './teach.js';

export { clearCache, webgpuAdapter };

const ALIASES = { ner: 'token-classification', 'sentiment-analysis': 'text-classification' };

/** Whether this browser exposes a WebGPU adapter (fallback adapters included). */
export async function webgpuAvailable() {
  return (await webgpuAdapter()) !== null;
}

function text(t, what = 'text') {
  if (typeof t !== 'string') throw new TypeError(`${what} must be a string, got ${t === null ? 'null' : typeof t}`);
  // Lone surrogates would not survive UTF-8; U+FFFD keeps every UTF-16 offset where it was.
  return t.toWellFormed ? t.toWellFormed() : t;
}

function texts(input) {
  return Array.isArray(input) ? input.map((t) => text(t)) : [text(input)];
}

function withMeta(value, meta) {
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(meta)) Object.defineProperty(value, k, { value: v, enumerable: false });
  }
  return value;
}

/**
 * The user-facing function for each task, given `run(request, single)`; `single` unwraps the
 * one result of a non-array input.
 */
const RUNNERS = {
  'text-classification': (run) => async (input, o = {}) => {
    const items = (Array.isArray(input) ? input : [input]).map((x) =>
      typeof x === 'string' ? { text: text(x) } : { text: text(x?.text), text_pair: x.text_pair == null ? undefined : text(x.text_pair, 'text_pair') },
    );
    return run({ top_k: 1, ...o, inputs: items }, !Array.isArray(input));
  },
  'token-classification': (run) => async (input, o = {}) => run({ ...o, texts: texts(input) }, !Array.isArray(input)),
  'question-answering': (run) => async (question, context, o = {}) => {
    if (question && typeof question === 'object') [question, context, o] = [question.question, question.context, context ?? {}];
    return run({ ...o, question: text(question, 'question'), context: text(context, 'context') }, false);
  },
  'feature-extraction': (run) => async (input, o = {}) => run({ ...o, texts: texts(input) }, !Array.isArray(input)),
  'fill-mask': (run) => async (input, o = {}) => run({ ...o, texts: texts(input) }, !Array.isArray(input)),
  'zero-shot-classification': (run) => async (input, labels, o = {}) => {
    const candidate_labels = typeof labels === 'string' ? labels.split(',').map((l) => l.trim()).filter(Boolean) : labels;
    if (!Array.isArray(candidate_labels)) throw new TypeError('candidate labels must be an array of strings or a comma-separated string');
    const request = { ...o, texts: texts(input), candidate_labels: candidate_labels.map((l) => text(l, 'label')) };
    return run(request, !Array.isArray(input));
  },
};

/**
 * Loads `model` for `task` and returns a function that runs it.
 * @see webert.d.ts for the options and result shapes of every task.
 */
export async function pipeline(task, model, options = {}) {
  const kind = ALIASES[task] ?? task;
  if (!(kind in RUNNERS)) {
    throw new Error(`unknown task "${task}"; supported: ${Object.keys(RUNNERS).join(', ')} (aliases: ${Object.keys(ALIASES).join(', ')})`);
  }
  const { head, ...rest } = options;
  const device = checkDevice(rest);
  if (model == null) throw new Error('pipeline() needs a model: a folder URL, a FileList / File[] or an object of file name → ArrayBuffer');
  if (head != null && kind !== 'text-classification') throw new Error(`the head option is for text-classification, not ${kind}`);
  const headBytes = head == null ? null : await readHead(head);
  const onProgress = options.onProgress ?? options.progress_callback;
  const entry = acquire(model, { ...rest, device }, onProgress);
  let info;
  try {
    info = await entry.ready;
  } catch (e) {
    release(entry);
    throw e;
  }
  return build(kind, entry, info, device, headBytes);
}

/**
 * Teaches a text classifier from `{ text, label }` examples on an encoder (a pipeline, whose
 * model is shared, or a model source). @see webert.d.ts
 */
export async function train(task, encoder, examples, options = {}) {
  const kind = ALIASES[task] ?? task;
  if (kind !== 'text-classification') throw new Error(`train() teaches text-classification, not "${task}"`);
  return teach(encoder, examples, options, { build, checkDevice });
}

/** The device option, checked along with `quantized`. */
function checkDevice(options) {
  const device = options.device ?? 'auto';
  if (!['auto', 'cpu', 'webgpu'].includes(device)) throw new Error(`unknown device "${device}"; use 'auto', 'cpu' or 'webgpu'`);
  if (!['int', 'f32', undefined].includes(options.quantized)) throw new Error(`unknown quantized compute "${options.quantized}"; use 'int' or 'f32'`);
  return device;
}

/**
 * The pipeline function for `kind` on a loaded model's entry (released if this fails); with
 * `headBytes`, text classification by that classifier head on the model's embeddings.
 */
async function build(kind, entry, info, device, headBytes = null) {
  // The engine's task registry says which tasks this model runs (`info.tasks`); a taught head
  // needs only the encoder's embeddings.
  const needs = headBytes ? 'feature-extraction' : kind;
  if (!info.tasks.includes(needs)) {
    release(entry);
    throw new Error(`this model cannot do ${kind}: it is a ${info.model_type} model with a ${info.task} head`);
  }
  const { host } = entry;
  let head = null;
  if (headBytes) {
    try {
      head = await host.send({ op: 'head', bytes: headBytes });
    } catch (e) {
      release(entry);
      throw e;
    }
  }
  const call = (wasmTask) => async (request, single) => {
    const t0 = performance.now();
    const lane = () => laneRequest('call', wasmTask, JSON.stringify(request));
    const { value, ms, backend, gpu_failure } = await host.send({ op: 'call', task: wasmTask, request }, { lane });
    state.backend = backend;
    state.gpu_failure = gpu_failure;
    return withMeta(single ? value[0] : value, { backend, ms, wall_ms: performance.now() - t0 });
  };
  const state = { backend: info.backend, gpu_failure: info.gpu_failure };
  const trained = head && call('trained-classification');
  const fn = RUNNERS[kind](head ? (request, single) => trained({ ...request, head: head.id }, single) : call(kind));
  if (head) Object.assign(fn, { head: head.head, exportHead: () => headBytes.slice() });
  if (kind === 'feature-extraction') {
    const rank = call('rank');
    fn.rank = async (query, documents, o = {}) => {
      const docs = documents.map((d) => text(d, 'document'));
      const r = await rank({ ...o, query: text(query, 'query'), documents: docs }, false);
      r.forEach((x) => (x.text = docs[x.corpus_id]));
      return r;
    };
  }
  let disposed = false;
  Object.defineProperties(fn, {
    backend: { get: () => state.backend, enumerable: true },
    gpuFailure: { get: () => state.gpu_failure ?? null, enumerable: true },
    [HOST]: { value: host }, // for testing.js
    [ENTRY]: { value: entry },
  });
  return Object.assign(fn, {
    task: kind,
    device,
    adapter: info.adapter ?? null,
    info,
    dispose() {
      if (!disposed) release(entry);
      disposed = true;
    },
    profile: async (t) => host.send({ op: 'profile', text: text(t) }),
  });
}
