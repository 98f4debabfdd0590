// webert: `await pipeline(task, model, options)` for BERT-family encoders, on WebGPU or
// WebAssembly SIMD.
// In browsers the model lives in a module worker (the page never freezes); in Node, or with
// `worker: false`, it runs in the calling thread.

import { Model, webgpuAdapter } from './core.js';
import { clearCache, isNode } from './files.js';
import { laneSupported, PageLane, REFUSED, VALUE } from './lane.js';

export { clearCache, webgpuAdapter };

const ALIASES = { ner: 'token-classification', 'sentiment-analysis': 'text-classification' };
// The head each task needs (`info.task` of the loaded model); null: any encoder.
const HEADS = {
  'text-classification': 'text-classification',
  'token-classification': 'token-classification',
  'question-answering': 'question-answering',
  'fill-mask': 'fill-mask',
  'feature-extraction': null,
  'zero-shot-classification': null,
};

/** Whether this browser exposes a WebGPU adapter (fallback adapters included). */
export async function webgpuAvailable() {
  return (await webgpuAdapter()) !== null;
}

class WorkerHost {
  constructor() {
    this.worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'webert' });
    this.next = 0;
    this.pending = new Map();
    this.worker.onmessage = ({ data }) => {
      if (data.lane !== undefined) return this.lane?.delivered(data.lane);
      const p = this.pending.get(data.id);
      if (!p) return;
      if (data.progress) return p.onProgress?.(data.progress);
      this.pending.delete(data.id);
      if (data.error) p.reject(errorFrom(data.error));
      else p.resolve(data.result);
    };
    this.worker.onerror = (e) => {
      e.preventDefault?.();
      this.fail(new Error(`webert worker failed: ${e.message || 'could not start (is worker.js served as JavaScript?)'}`));
    };
    this.lane = laneSupported() ? new PageLane() : null;
    this.laneStats = this.lane ? { answered: 0, refused: 0 } : null;
    if (this.lane) this.post({ op: 'lane', buffer: this.lane.buffer });
  }

  post(msg) {
    this.lane?.posting();
    this.worker.postMessage(msg);
  }

  send(msg, onProgress, byMessage = false) {
    if (this.dead) return Promise.reject(this.dead);
    // Calls (and the trap test hook) take the express lane when nothing is ahead of them.
    const lane = msg.op === 'call' ? () => `${msg.task}\n${JSON.stringify(msg.request)}` : msg.what === 'trap' ? () => 'debug:trap\n' : null;
    if (lane && this.lane && !byMessage && this.pending.size === 0) {
      const answer = this.lane.call(lane, () => !this.dead);
      if (answer) return this.fromLane(answer, msg, onProgress);
    }
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress });
      this.post({ ...msg, id });
    });
  }

  fromLane(answer, msg, onProgress) {
    return new Promise((resolve, reject) => {
      this.laneReject = reject; // for `fail`, while the lane has it
      answer.then((r) => {
        if (this.laneReject === reject) this.laneReject = null;
        if (this.dead) return reject(this.dead);
        this.laneStats[r.kind === REFUSED ? 'refused' : 'answered']++;
        if (r.kind === REFUSED) return this.send(msg, onProgress, true).then(resolve, reject);
        const value = JSON.parse(r.text);
        if (r.kind === VALUE) resolve(value);
        else reject(errorFrom(value));
      }).catch(reject);
    });
  }

  fail(err) {
    this.dead = err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    this.laneReject?.(err);
    this.worker.terminate();
  }
}

function errorFrom({ name, message }) {
  return Object.assign(new Error(message), { name: name ?? 'Error' });
}

class LocalHost {
  async send(msg, onProgress) {
    if (this.dead) throw this.dead;
    switch (msg.op) {
      case 'load':
        this.model = new Model(msg.source, msg.options);
        return this.model.load(onProgress);
      case 'call':
        return this.model.call(msg.task, msg.request);
      case 'debug':
        return this.model.debug(msg.what);
    }
  }

  fail(err) {
    this.dead = err;
    this.model?.dispose();
  }
}

const shared = new Map();

/** Starts a host and loads the model; URL models are shared by pipelines with equal options. */
function acquire(model, options, onProgress) {
  const inWorker = options.worker ?? (!isNode && typeof Worker !== 'undefined');
  const { signal, onProgress: _p, progress_callback: _c, ...rest } = options;
  const isUrl = typeof model === 'string' || model instanceof URL;
  let source = model;
  if (isUrl && typeof location !== 'undefined' && !/^[a-z]+:/i.test(String(model))) {
    source = new URL(String(model), location.href).href; // the worker's base URL differs
  } else if (isUrl) {
    source = String(model);
  } else if (inWorker && typeof FileList !== 'undefined' && model instanceof FileList) {
    source = [...model];
  }
  const key = isUrl && !signal ? JSON.stringify([source, inWorker, rest]) : null;
  const existing = key && shared.get(key);
  if (existing) {
    existing.refs++;
    return existing;
  }
  const host = inWorker ? new WorkerHost() : new LocalHost();
  const entry = { host, refs: 1, key };
  entry.ready = host.send({ op: 'load', source, options: inWorker ? rest : { ...rest, signal } }, onProgress);
  if (signal) {
    const abort = () => host.fail(signal.reason ?? new DOMException('model loading aborted', 'AbortError'));
    signal.addEventListener('abort', abort, { once: true });
    entry.ready.finally(() => signal.removeEventListener('abort', abort)).catch(() => {});
    if (signal.aborted) abort();
  }
  if (key) shared.set(key, entry);
  entry.ready.catch(() => key && shared.get(key) === entry && shared.delete(key));
  return entry;
}

function release(entry) {
  if (--entry.refs > 0) return;
  if (entry.key && shared.get(entry.key) === entry) shared.delete(entry.key);
  entry.host.fail(new Error('the pipeline was disposed'));
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
  const device = options.device ?? 'auto';
  if (!['auto', 'cpu', 'webgpu'].includes(device)) throw new Error(`unknown device "${device}"; use 'auto', 'cpu' or 'webgpu'`);
  if (!['int', 'f32', undefined].includes(options.quantized)) throw new Error(`unknown quantized compute "${options.quantized}"; use 'int' or 'f32'`);
  if (model == null) throw new Error('pipeline() needs a model: a folder URL, a FileList / File[] or an object of file name → ArrayBuffer');
  const onProgress = options.onProgress ?? options.progress_callback;
  const entry = acquire(model, { ...options, device }, onProgress);
  let info;
  try {
    info = await entry.ready;
  } catch (e) {
    release(entry);
    throw e;
  }
  const head = HEADS[kind];
  if (head && info.task !== head) {
    release(entry);
    throw new Error(`this model cannot do ${kind}: it is a ${info.model_type} model with a ${info.task} head`);
  }
  const call = (wasmTask) => async (request, single) => {
    const t0 = performance.now();
    const { value, ms, backend, gpu_failure } = await entry.host.send({ op: 'call', task: wasmTask, request });
    state.backend = backend;
    state.gpu_failure = gpu_failure;
    return withMeta(single ? value[0] : value, { backend, ms, wall_ms: performance.now() - t0 });
  };
  const state = { backend: info.backend, gpu_failure: info.gpu_failure };
  const fn = RUNNERS[kind](call(kind));
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
    debugTrap: () => entry.host.send({ op: 'debug', what: 'trap' }),
    debugTrapAsync: () => entry.host.send({ op: 'debug', what: 'trap-async' }),
    debugLoseDevice: () => entry.host.send({ op: 'debug', what: 'lose-device' }),
    debugProfile: (text) => entry.host.send({ op: 'debug', what: `profile:${text}` }),
    debugThreads: (n) => entry.host.send({ op: 'debug', what: `threads:${n}` }),
    /** Calls the express lane answered and refused (sent on by message); null without a lane. */
    debugLane: () => (entry.host.laneStats ? { ...entry.host.laneStats } : null),
  });
}
