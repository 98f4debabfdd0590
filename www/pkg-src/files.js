// Gathers a model folder's files as bytes: from a base URL (streamed with progress, kept in the
// Cache API: from-url.js), from File/Blob objects (folder picker, drag and drop), from
// ArrayBuffers, or from a directory path in Node (local-files.js), or by model id. Only the
// files the engine reads are fetched.

import { CACHE_NAME } from './cache.js';
import { idFolder } from './disk-cache.js';
import { failure } from './download.js';
import { fromUrl } from './from-url.js';
import { fromEntries, fromNodeDir } from './local-files.js';
import { PACKED_CACHE } from './packed-cache.js';
import { isNode } from './platform.js';
import { TILINGS_CACHE } from './tilings.js';
import { folderUrl, withScheme } from './urls.js';

/** Within a file, progress events at most this often: a download arrives in chunks of ~64 KiB, each otherwise an event posted to the page. */
const PROGRESS_MS = 25;

/** Tracks bytes over all files for progress events. */
class Progress {
  constructor(report) {
    this.report = report ?? (() => {});
    this.files = new Map();
    this.last = -Infinity;
  }
  /** A file's bytes so far; `total` 0 while unknown. Its first and last events always go out. */
  update(file, bytes, total, cached = false) {
    const first = !this.files.has(file);
    this.files.set(file, { bytes, total: Math.max(total, bytes) });
    const now = performance.now();
    if (!first && !cached && !(total > 0 && bytes >= total) && now - this.last < PROGRESS_MS) return;
    this.last = now;
    let b = 0;
    let t = 0;
    for (const f of this.files.values()) {
      b += f.bytes;
      t += f.total;
    }
    this.report({ stage: 'download', file, bytes: b, total: t, fileBytes: bytes, fileTotal: Math.max(total, bytes), cached });
  }
  /** A warning that does not stop the load (the Cache API refused a file), also on the console. */
  warn(message) {
    console.warn(message);
    const last = [...this.files.values()].reduce((s, f) => ({ bytes: s.bytes + f.bytes, total: s.total + f.total }), { bytes: 0, total: 0 });
    this.report({ stage: 'warning', message, ...last });
  }
}

/**
 * All files for a model source, as `[{ name, bytes }]`, with `origin` for error messages and
 * `again` (a function returning the same source for a reload).
 */
export async function gatherFiles(source, opts, report, layout) {
  const progress = new Progress(report);
  // An unknown dtype fails before any download (the engine's message lists the known ones).
  if (opts.dtype != null && !(opts.dtype in layout.dtypes)) {
    await layout.ready;
    layout.pick('', layout.required, opts.dtype);
  }
  if (opts.hub) return fromHub(source, opts, progress, layout);
  if (typeof source === 'string' || source instanceof URL) {
    const s = withScheme(String(source));
    if (isNode && !/^(https?|data|blob):/.test(s)) return fromNodeDir(s, opts, progress, layout);
    return fromUrl(s, opts, progress, layout);
  }
  return fromEntries(source, opts, progress, layout);
}

/** A model id (`resolveModel` in env.js): a Node directory of that name, else a copy under
 * `env.localModelPath`, else the remote host. */
async function fromHub(remote, opts, progress, layout) {
  const { hub } = opts;
  if (isNode && hub.path) {
    const fs = await import(/* @vite-ignore */ 'node:fs/promises');
    const isDir = (p) => fs.stat(p).then((s) => s.isDirectory(), () => false);
    if (await isDir(hub.path)) return fromNodeDir(hub.path, opts, progress, layout);
    // `models/minilm` beside a `models` folder is a path, whatever its shape: no Hub request.
    if (hub.path.includes('/') && (await isDir(hub.path.slice(0, hub.path.lastIndexOf('/'))))) {
      throw failure(`no folder ${hub.path} in ${globalThis.process.cwd()} (read as a path, not a model id: the folder it would be in is here)`, { notFound: true });
    }
  }
  if (hub.local) {
    try {
      if (isNode) {
        const fs = await import(/* @vite-ignore */ 'node:fs/promises');
        if (await fs.stat(hub.local).then((s) => s.isDirectory(), () => false)) return await fromNodeDir(hub.local, opts, progress, layout);
      } else {
        return await fromUrl(hub.local, { ...opts, cache: false }, progress, layout);
      }
    } catch (e) {
      // Not there (a site may answer a missing path with its HTML page): try the remote host.
      if (!(e.notFound || e.notJson) || !hub.remote) throw e;
    }
  }
  if (!hub.remote) {
    // What an earlier load kept (the Cache API, or the disk cache in Node) needs no network.
    try {
      return await fromUrl(remote, { ...opts, offline: true }, progress, layout, hub.label);
    } catch (e) {
      if (!e.notFound) throw e;
    }
    throw new Error(`${hub.label}: not found locally${hub.local ? ` (${hub.local})` : ''} and ${hub.localOnly ? 'local_files_only is set' : 'env.allowRemoteModels is false'}`);
  }
  try {
    return await fromUrl(remote, opts, progress, layout, hub.label);
  } catch (e) {
    if (!e.notFound || !hub.path) throw e;
    // `models/pii` from the wrong directory reads as an id: say both what was looked for.
    const cwd = globalThis.process?.cwd?.() ?? '.';
    const why = e.message.startsWith(`${hub.label}: `) ? e.message.slice(hub.label.length + 2) : e.message;
    throw failure(`no folder ${hub.path} in ${cwd}, and no ${hub.label}: ${why}`, { notFound: true });
  }
}

/**
 * Deletes cached model files: those under `base` (a model id's disk folder too, in Node), or
 * all when no base is given.
 */
export async function clearCache(base, resolve = (b) => ({ source: b })) {
  const { source, hub } = resolve(base);
  if (isNode && (hub || !base)) {
    const dir = hub ? await idFolder(hub) : await idFolder(null);
    const fs = await import(/* @vite-ignore */ 'node:fs/promises');
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  }
  if (typeof caches === 'undefined') return;
  base = source;
  if (!base) {
    await caches.delete(CACHE_NAME);
    await caches.delete(TILINGS_CACHE);
    await caches.delete(PACKED_CACHE);
    return;
  }
  const root = folderUrl(base).href;
  for (const name of [CACHE_NAME, PACKED_CACHE]) {
    const cache = await caches.open(name);
    for (const req of await cache.keys()) if (req.url.startsWith(root)) await cache.delete(req);
  }
}
