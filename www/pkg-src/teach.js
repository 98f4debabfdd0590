// Teaching a classifier from examples, in the page: `train()` embeds the examples with the
// encoder (feature-extraction, mean pooling, normalised) in chunks, with progress, then the
// engine fits scikit-learn's LogisticRegression(C) on them; the result is a text-classification
// pipeline whose head is a small safetensors file (`exportHead()`, `pipeline(..., { head })`).

import { pipelineOptions } from './options.js';
import { isNode } from './platform.js';
import { ENTRY, acquire, release, retain } from './sharing.js';

/** Texts embedded per call: progress between them, and results well under the express lane's 1 MB. */
const CHUNK = 32;

/** A head file from a URL (a path in Node), an ArrayBuffer, a typed array or a Blob, as bytes. */
export async function readHead(head) {
  if (head instanceof ArrayBuffer) return new Uint8Array(head.slice(0));
  if (ArrayBuffer.isView(head)) return new Uint8Array(head.buffer.slice(head.byteOffset, head.byteOffset + head.byteLength));
  if (typeof Blob !== 'undefined' && head instanceof Blob) return new Uint8Array(await head.arrayBuffer());
  if (typeof head === 'string' || head instanceof URL) {
    const s = String(head);
    if (isNode && !/^(https?|data|blob):/i.test(s)) {
      const fsName = 'node:fs/promises';
      const fs = await import(/* @vite-ignore */ fsName);
      return new Uint8Array(await fs.readFile(s.startsWith('file:') ? new URL(s) : s));
    }
    const url = typeof location !== 'undefined' ? new URL(s, location.href) : new URL(s);
    const r = await fetch(url);
    if (!r.ok) throw new Error(`classifier head ${url}: HTTP ${r.status}`);
    return new Uint8Array(await r.arrayBuffer());
  }
  throw new TypeError('head must be a URL, an ArrayBuffer, a typed array or a Blob');
}

function examplesOf(examples) {
  if (!Array.isArray(examples) || examples.length === 0) throw new TypeError('examples must be a non-empty array of { text, label }');
  const texts = [];
  const labels = [];
  examples.forEach((e, i) => {
    if (typeof e?.text !== 'string') throw new TypeError(`example ${i}: text must be a string`);
    if (typeof e.label !== 'string' || !e.label) throw new TypeError(`example ${i}: label must be a non-empty string`);
    texts.push(e.text.toWellFormed ? e.text.toWellFormed() : e.text);
    labels.push(e.label);
  });
  const distinct = new Set(labels);
  if (distinct.size < 2) throw new Error(`training needs examples of at least two labels; got only "${labels[0]}"`);
  return { texts, labels };
}

/**
 * `train()`: `encoder` is a pipeline (its model is shared) or a model source (loaded with
 * `options`); `build` and `checkDevice` are webert.js's.
 */
export async function teach(encoder, examples, options, { build, checkDevice }) {
  const { texts, labels } = examplesOf(examples);
  const C = options.C ?? 1;
  if (typeof C !== 'number' || !(C > 0) || !Number.isFinite(C)) throw new Error(`C must be a positive finite number, got ${C}`);
  const { C: _c, truncation = true, head, onProgress: _p, progress_callback: _pc, ...given } = options;
  if (head !== undefined) throw new Error('train() makes the classifier\'s head: `head` is pipeline()\'s option, leave it out here');
  // The load's options as pipeline() takes them: transformers.js's names translated, unknown keys refused.
  const rest = pipelineOptions(given);
  const onProgress = options.onProgress ?? options.progress_callback;
  let entry;
  let info;
  let device;
  if (typeof encoder === 'function' && encoder[ENTRY]) {
    entry = retain(encoder[ENTRY]);
    ({ info, device } = encoder);
  } else {
    if (encoder == null) throw new Error('train() needs an encoder: a pipeline or a model (folder URL, files or bytes)');
    device = checkDevice(rest);
    entry = acquire(encoder, { ...rest, device }, onProgress);
    try {
      info = await entry.ready;
    } catch (e) {
      release(entry);
      throw e;
    }
  }
  let bytes;
  const training = { examples: texts.length, embed_ms: 0, fit_ms: 0 };
  try {
    const hidden = info.hidden_size;
    const features = new Float32Array(texts.length * hidden);
    const t0 = performance.now();
    for (let i = 0; i < texts.length; i += CHUNK) {
      options.signal?.throwIfAborted();
      const request = { texts: texts.slice(i, i + CHUNK), pooling: 'mean', normalize: true, truncation };
      const { value } = await entry.host.send({ op: 'call', task: 'feature-extraction', request });
      value.forEach((v, j) => features.set(v, (i + j) * hidden));
      onProgress?.({ stage: 'embed', done: Math.min(i + CHUNK, texts.length), total: texts.length });
    }
    training.embed_ms = performance.now() - t0;
    const fit = await entry.host.send({ op: 'fit', features, labels, C });
    bytes = fit.bytes;
    training.fit_ms = fit.ms;
  } catch (e) {
    release(entry);
    throw e;
  }
  const clf = await build('text-classification', entry, info, device, bytes);
  return Object.assign(clf, { training: { ...training, iterations: clf.head.iterations, converged: clf.head.converged } });
}
