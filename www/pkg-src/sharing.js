// The hosts of this context's pipelines: a URL model is loaded once for all pipelines with equal
// options, and its host ends with the last of them.

import { withScheme } from './urls.js';
import { isNode } from './platform.js';
import { LocalHost, WorkerHost } from './host.js';
import { holdModelCache, missingEntries } from './cache.js';
import { env } from './env.js';

const shared = new Map();

// A worker whose pipelines were all disposed, its model dropped, kept `env.spareWorkerMs` for
// the next pipeline that asks for the same build (`threads`): starting a module worker and its
// WebAssembly module is 100-180 ms of a load. One at most.
let spare = null;

function endSpare() {
  const s = spare;
  spare = null;
  if (s) {
    clearTimeout(s.timer);
    s.host.fail(new Error('the pipeline was disposed'));
  }
}

function takeSpare(threads) {
  if (!spare || spare.threads !== threads || spare.host.dead || !(env.spareWorkerMs > 0)) return endSpare();
  const { host, timer } = spare;
  spare = null;
  clearTimeout(timer);
  return host;
}

function keepSpare(host, threads) {
  endSpare();
  host.send({ op: 'dispose' }).catch(() => {});
  spare = { host, threads, timer: setTimeout(endSpare, env.spareWorkerMs) };
}

/** A pipeline's entry (attached to the pipeline), for `train()` on an encoder pipeline. */
export const ENTRY = Symbol('webert model entry');

/** Starts a host and loads the model: `{ host, ready }`, `ready` resolving to the model's info. */
export function acquire(model, options, onProgress) {
  const inWorker = options.worker ?? (!isNode && typeof Worker !== 'undefined');
  const { signal, onProgress: _p, progress_callback: _c, ...rest } = options;
  const isUrl = typeof model === 'string' || model instanceof URL;
  let source = isUrl ? withScheme(String(model)) : model;
  if (isUrl && typeof location !== 'undefined' && !/^[a-z]+:/i.test(source)) {
    source = new URL(source, location.href).href; // the worker's base URL differs
  } else if (inWorker && typeof FileList !== 'undefined' && model instanceof FileList) {
    source = [...model];
  }
  const key = isUrl && !signal ? JSON.stringify([source, inWorker, rest]) : null;
  const existing = key && shared.get(key);
  if (existing) {
    existing.refs++;
    return existing;
  }
  const threads = JSON.stringify(rest.threads ?? null);
  const reused = inWorker ? takeSpare(threads) : null;
  const host = reused ?? (inWorker ? new WorkerHost() : new LocalHost());
  const entry = { host, refs: 1, key, threads, loaded: false };
  // A worker's cached files must outlive it (cache.js): the page holds the cache open first.
  const held = inWorker && rest.cache !== false ? holdModelCache() : null;
  const start = performance.now();
  entry.ready = Promise.resolve(held).then(() => host.send({ op: 'load', source, options: inWorker ? rest : { ...rest, signal } }, { onProgress }))
    .then((info) => checkKept(info, inWorker, onProgress))
    .then((info) => withWall(info, performance.now() - start, performance.timeOrigin + start))
    .then((info) => {
      entry.loaded = true;
      return inWorker ? { ...info, workerReused: !!reused } : info;
    });
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

/**
 * The load's time as the page saw it (`wall_ms`), and what the model's phases leave of it:
 * starting the worker and messages between it and the page (`worker_ms`), of which
 * `worker_start_ms` passed before the model's thread began the load (clocks of two contexts,
 * compared through their time origins).
 */
function withWall(info, wall, startedAt) {
  if (!info.loadPhases) return info;
  const round = (ms) => Math.round(ms * 10) / 10;
  const { began_at: began, ...phases } = info.loadPhases;
  const loadPhases = { ...phases, wall_ms: round(wall), worker_ms: round(Math.max(0, wall - phases.total_ms)) };
  if (began != null) loadPhases.worker_start_ms = round(Math.min(loadPhases.worker_ms, Math.max(0, began - startedAt)));
  return { ...info, loadPhases };
}

/** `info` without the worker's list of cached entries, with `cacheError` set if the page lacks some. */
async function checkKept(info, inWorker, onProgress) {
  const { cacheWritten, ...rest } = info;
  if (!inWorker || !cacheWritten?.length) return rest;
  const lost = await missingEntries(cacheWritten);
  if (lost.length) {
    const message = `webert: the browser did not keep ${lost.length} of the ${cacheWritten.length} files the model's worker stored in the Cache API (${lost[0]}${lost.length > 1 ? ', …' : ''}); this model will be downloaded again next time`;
    console.warn(message);
    onProgress?.({ stage: 'warning', message, bytes: 0, total: 0 });
    rest.cacheError ??= 'not kept: the browser dropped the entries the worker stored';
  }
  return rest;
}

/** One more pipeline on an entry's model (a classifier taught on an encoder pipeline's model). */
export function retain(entry) {
  entry.refs++;
  return entry;
}

export function release(entry) {
  if (--entry.refs > 0) return;
  if (entry.key && shared.get(entry.key) === entry) shared.delete(entry.key);
  const { host } = entry;
  const idle = host instanceof WorkerHost && !host.dead && host.pending.size === 0 && !host.laneReject;
  if (idle && entry.loaded && env.spareWorkerMs > 0) return keepSpare(host, entry.threads);
  host.fail(new Error('the pipeline was disposed'));
}
