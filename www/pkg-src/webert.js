// webert: `await pipeline(task, model, options)` for BERT-family encoders, on WebGPU or
// WebAssembly SIMD.
// In browsers the model lives in a module worker (the page never freezes); in Node, or with
// `worker: false`, it runs in the calling thread.

import { env, resolveModel } from './env.js';
import { clearCache as clearFiles } from './files.js';
import { HOST, WorkerHost } from './host.js';
import { laneRequest } from './lane.js';
import { webgpuAdapter } from './runtime.js';
import { redact } from './redact.js';
import { ENTRY, acquire, release } from './sharing.js';
import { pipelineOptions } from './options.js';
import { withTransformersEvents } from './progress.js';
import { ALIASES, TASKS } from './tasks.js';
import { readHead, teach } from './teach.js';
import { Tensor, cos_sim, quantizeEmbeddings, tensorOf } from './tensor.js';

export { Tensor, cos_sim, env, quantizeEmbeddings as quantize_embeddings, redact, webgpuAdapter };

/** Deletes cached model files: those of a folder URL or model id, or all (and saved WebGPU tilings). */
export function clearCache(model) {
  return clearFiles(model, (m) => (m ? resolveModel(m) : { source: m }));
}


/** transformers.js's default model (and dtype) of each task, for `pipeline(task)` with no model. */
const DEFAULT_MODELS = {
  'text-classification': { id: 'Xenova/distilbert-base-uncased-finetuned-sst-2-english' },
  'token-classification': { id: 'Xenova/bert-base-multilingual-cased-ner-hrl' },
  'question-answering': { id: 'Xenova/distilbert-base-cased-distilled-squad' },
  'fill-mask': { id: 'onnx-community/ettin-encoder-32m-ONNX', dtype: 'fp32' },
  'zero-shot-classification': { id: 'Xenova/distilbert-base-uncased-mnli' },
  'feature-extraction': { id: 'onnx-community/all-MiniLM-L6-v2-ONNX', dtype: 'fp32' },
};

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

/** The non-enumerable call facts (`backend`, `ms`, …) that `withMeta` put on `from`. */
function metaOf(from) {
  return Object.fromEntries(Object.getOwnPropertyNames(from).filter((k) => !Object.prototype.propertyIsEnumerable.call(from, k) && k !== 'length').map((k) => [k, from[k]]));
}

/** A call's answer reshaped by `shape` (per text), keeping its call facts. */
async function reshaped(answer, shape) {
  const value = await answer;
  return withMeta(shape(value), metaOf(value));
}

/** transformers.js's pooling names that are another name of webert's. */
const POOLING_NAMES = { first_token: 'cls', eos: 'last_token' };

/** transformers.js's fill-mask shape: one mask gives its list of tokens, several masks a list per mask. */
const perMask = (masks) => (masks.length === 1 ? masks[0] : masks);

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
    const answer = run({ top_k: 1, ...o, inputs: items }, !Array.isArray(input));
    // A batch with top_k 1: the best label of each text, one list (transformers.js's shape).
    const bestOfEach = Array.isArray(input) && (o.top_k === undefined || o.top_k === 1);
    return bestOfEach ? reshaped(answer, (all) => all.map((labels) => labels[0])) : answer;
  },
  'token-classification': (run) => async (input, o = {}) => run({ ...o, texts: texts(input) }, !Array.isArray(input)),
  // (question, context), ({ question, context }), or arrays of either: top_k 1 gives the answer
  // itself, more a list, and arrays a result per pair, as transformers.js.
  'question-answering': (run) => async (question, context, o = {}) => {
    const objects = question !== null && typeof question === 'object' && (!Array.isArray(question) || typeof question[0] === 'object');
    if (objects) [question, context, o] = [question, null, context ?? {}];
    const batched = Array.isArray(question);
    const pairs = objects
      ? (batched ? question : [question]).map((p) => [p?.question, p?.context])
      : (batched ? question : [question]).map((q, i) => [q, Array.isArray(context) ? context[i] : context]);
    if (batched && !objects && Array.isArray(context) && context.length !== question.length) {
      throw new TypeError(`${question.length} questions and ${context.length} contexts: give one context, or one per question`);
    }
    const top1 = (o.top_k ?? TASKS['question-answering'].defaults.top_k) === 1;
    const results = [];
    let last;
    for (const [q, c] of pairs) {
      last = await run({ ...o, question: text(q, 'question'), context: text(c, 'context') }, false);
      results.push(top1 ? (last[0] ?? null) : last);
    }
    const value = batched ? results : results[0];
    return last && value && typeof value === 'object' ? withMeta(value, metaOf(last)) : value;
  },
  // A Tensor, as transformers.js: [texts, dim] pooled, else [texts, tokens, dim] (its default).
  // transformers.js's `quantize` / `precision` pack the pooled vectors into bits.
  'feature-extraction': (run) => async (input, { quantize = false, precision = 'binary', ...o } = {}) => {
    const pooling = POOLING_NAMES[o.pooling] ?? o.pooling ?? 'none';
    if (quantize && !['binary', 'ubinary'].includes(precision)) throw new Error(`precision must be 'binary' or 'ubinary', got ${JSON.stringify(precision)}`);
    if (quantize && pooling === 'none') throw new Error('quantize packs pooled vectors: give a pooling (such as \'mean\') with it');
    return reshaped(run({ ...o, pooling, texts: texts(input) }, false), (rows) => {
      const tensor = tensorOf(rows, pooling === 'none');
      return quantize ? quantizeEmbeddings(tensor, precision) : tensor;
    });
  },
  'fill-mask': (run) => async (input, o = {}) => {
    const single = !Array.isArray(input);
    return reshaped(run({ ...o, texts: texts(input) }, false), (all) => (single ? perMask(all[0]) : all.map(perMask)));
  },
  'text-scoring': (run) => async (input, o = {}) => run({ ...o, texts: texts(input) }, !Array.isArray(input)),
  'next-sentence-prediction': (run) => async (input, o = {}) => {
    const pair = (x) => {
      if (typeof x?.text_pair !== 'string') throw new TypeError('next-sentence-prediction takes { text, text_pair } (or an array of them)');
      return { text: text(x.text), text_pair: text(x.text_pair, 'text_pair') };
    };
    return run({ ...o, inputs: (Array.isArray(input) ? input : [input]).map(pair) }, !Array.isArray(input));
  },
  'zero-shot-classification': (run) => async (input, labels, o = {}) => {
    // transformers.js passes the labels second; an options object with `candidate_labels` too.
    if (labels && typeof labels === 'object' && !Array.isArray(labels)) [labels, o] = [labels.candidate_labels, labels];
    const { candidate_labels: _, ...rest } = o;
    o = rest;
    const candidate_labels = typeof labels === 'string' ? labels.split(',').map((l) => l.trim()).filter(Boolean) : labels;
    if (!Array.isArray(candidate_labels)) throw new TypeError('candidate labels must be an array of strings or a comma-separated string');
    const sequences = texts(input);
    const request = { ...o, texts: sequences, candidate_labels: candidate_labels.map((l) => text(l, 'label')) };
    // `{ sequence, labels, scores }` per text, best first, as transformers.js and Hugging Face's pipeline.
    const shape = (ranked, i) => ({ sequence: sequences[i], labels: ranked.map((r) => r.label), scores: ranked.map((r) => r.score) });
    return reshaped(run(request, false), (all) => (Array.isArray(input) ? all.map(shape) : shape(all[0], 0)));
  },
};
// Every task of the engine's table (tasks.js) has its function here, and no other.
const unmatched = [...Object.keys(TASKS), ...Object.keys(RUNNERS)].filter((t) => !(t in TASKS) || !(t in RUNNERS));
if (unmatched.length) throw new Error(`webert: tasks.js and RUNNERS disagree on ${unmatched.join(', ')}`);

/**
 * Loads `model` for `task` and returns a function that runs it.
 * @see webert.d.ts for the options and result shapes of every task.
 */
export async function pipeline(task, model, options = {}) {
  const kind = ALIASES[task] ?? task;
  if (!(kind in TASKS)) {
    throw new Error(`unknown task "${task}"; supported: ${Object.keys(TASKS).join(', ')} (aliases: ${Object.keys(ALIASES).join(', ')})`);
  }
  options = pipelineOptions(options);
  const { head, revision, localOnly, ...rest } = options;
  const device = checkDevice(rest);
  const fallback = model == null ? DEFAULT_MODELS[kind] : null;
  if (model == null && !fallback) {
    throw new Error(`pipeline('${task}') needs a model (transformers.js has no default for it either): a model id, a folder URL, a FileList / File[] or an object of file name → ArrayBuffer`);
  }
  if (fallback) {
    model = fallback.id;
    if (fallback.dtype && rest.dtype == null && rest.weights == null) rest.dtype = fallback.dtype;
  }
  try {
    return await load(kind, model, options, rest, device, head, revision, localOnly);
  } catch (e) {
    if (!fallback || e?.name === 'AbortError') throw e;
    // Say where the model came from: the caller named none.
    throw new Error(`pipeline('${task}') with no model loads transformers.js's default, ${fallback.id}: ${e.message}. Pass a model (an id, a folder URL or files) to load another`, { cause: e });
  }
}

async function load(kind, model, options, rest, device, head, revision, localOnly) {
  if (rest.dtype != null && typeof rest.dtype !== 'string') throw new TypeError(`dtype must be a string such as 'q8' or 'fp32', got ${typeof rest.dtype}`);
  if (head != null && kind !== 'text-classification') throw new Error(`the head option is for text-classification, not ${kind}`);
  const headBytes = head == null ? null : await readHead(head);
  // `progress_callback` (transformers.js's name) also gets transformers.js's events.
  const onProgress = options.onProgress ?? (options.progress_callback && withTransformersEvents(options.progress_callback, typeof model === 'string' ? model : String(model?.href ?? 'files'), kind));
  const { source, hub } = resolveModel(model, revision ?? 'main');
  if (hub && localOnly) Object.assign(hub, { remote: false, localOnly: true }); // transformers.js's local_files_only
  const entry = acquire(source, { ...rest, device, ...(hub && { hub }) }, onProgress);
  // Entities are what redact() takes: a model in a worker leaves this context without a module,
  // so start one for redact() while the model loads (in-thread models start it themselves).
  const page = kind === 'token-classification' && entry.host instanceof WorkerHost;
  const redactor = page ? redact.ready().catch(() => {}) : null;
  let info;
  try {
    info = await entry.ready;
    await redactor;
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
  if (!['auto', 'cpu', 'webgpu'].includes(device)) throw new Error(`unknown device "${device}"; use 'auto', 'cpu' (or 'wasm') or 'webgpu' (or 'gpu')`);
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
  // In a browser the engine cannot see the adapter's name (wgpu gets an empty one); the page can.
  const named = (b) => (info.adapter && typeof b === 'string' ? b.replace('unnamed adapter', info.adapter) : b);
  info.backend = named(info.backend);
  let head = null;
  if (headBytes) {
    try {
      head = await host.send({ op: 'head', bytes: headBytes });
    } catch (e) {
      release(entry);
      throw e;
    }
  }
  let disposed = false;
  const alive = () => {
    if (disposed) throw new Error(`this ${kind} pipeline was disposed; create a new one with pipeline()`);
  };
  const call = (wasmTask) => async ({ signal, onProgress, ...request }, single) => {
    alive();
    signal?.throwIfAborted();
    const t0 = performance.now();
    // A watched call reports its windows and stops between them when `signal` aborts.
    const watched = !!(signal || onProgress);
    const lane = watched ? undefined : () => laneRequest('call', wasmTask, JSON.stringify(request));
    const { value, ms, backend, gpu_failure } = await host.send({ op: 'call', task: wasmTask, request, watched }, { lane, onProgress, signal });
    state.backend = named(backend);
    state.gpu_failure = gpu_failure;
    const extra = wasmTask === 'zero-shot-classification' ? { method: info.zero_shot } : {};
    return withMeta(single ? value[0] : value, { backend: state.backend, ms, wall_ms: performance.now() - t0, ...extra });
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
  if (kind === 'fill-mask') fn.score = RUNNERS['text-scoring'](call('text-scoring'));
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
    profile: async (t) => {
      alive();
      return host.send({ op: 'profile', text: text(t) });
    },
    roofline: async (t, { runs = 10, ...rest } = {}) => {
      alive();
      const unknown = Object.keys(rest);
      if (unknown.length) throw new Error(`webert: roofline() takes { runs }, not ${unknown.join(', ')}`);
      if (!Number.isInteger(runs) || runs < 1) throw new Error(`webert: roofline() runs must be a positive integer, got ${runs}`);
      return host.send({ op: 'roofline', text: text(t), runs });
    },
  });
}
