// Gathers a model folder's files as bytes: from a base URL (streamed with progress, kept in the
// Cache API), from File/Blob objects (folder picker, drag and drop), from ArrayBuffers, or from a
// directory path in Node. Only the files the engine reads are fetched.

import { CACHE_NAME, openModelCache } from './cache.js';
import { isNode } from './platform.js';
import { idFolder, openDiskCache } from './disk-cache.js';
import { watchdog } from './watchdog.js';
import { checkJson, isHtml, notWeights, shardNames } from './sniff.js';
import { TILINGS_CACHE } from './tilings.js';

const MANIFEST = '.webert-files.json';
// Which files to read comes from the engine (`modelFiles()` of the wasm glue), as a layout
// `{ required, text, weights }`: the files a folder must have, the text files read when
// present, and the weight files in the engine's order of preference.


/**
 * The files of `names` that the engine needs: config, tokenizer, and one set of weights (the
 * file `opts.weights`, else the engine's choice for `opts.dtype`: `layout.pick`).
 */
export function pickFiles(origin, names, opts, layout, config = null) {
  const { weights } = opts;
  if (!weights) {
    const preferred = defaultDtype(opts, config, layout);
    const has = preferred && names.includes(layout.dtypes[preferred]);
    return layout.pick(origin, names, opts.dtype ?? (has ? preferred : undefined));
  }
  const has = new Set(names);
  for (const r of layout.required) {
    if (!has.has(r)) throw new Error(`the model folder has no ${r} (found: ${names.join(', ') || 'nothing'})`);
  }
  if (!has.has(weights)) throw new Error(`the model folder has no ${weights}`);
  return [...layout.text.filter((n) => has.has(n)), weights];
}

/**
 * The weights to look for first when the caller gave no dtype, as transformers.js chooses:
 * the model's own `transformers.js_config.dtype` in config.json, else q8 in a browser (where a
 * download's size counts) and the most accurate present in Node or on WebGPU (null).
 */
export function defaultDtype(opts, config, layout) {
  if (opts.dtype != null || opts.weights != null) return null;
  const own = config?.['transformers.js_config']?.dtype;
  const named = typeof own === 'string' ? own : own?.model;
  if (named && named !== 'auto' && named in layout.dtypes) return named;
  return isNode || opts.device === 'webgpu' ? null : 'q8';
}

/** config.json's object from the gathered bytes, or null. */
function configOf(bytes) {
  try {
    return bytes ? JSON.parse(new TextDecoder().decode(bytes)) : null;
  } catch {
    return null;
  }
}

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

async function checkHash(name, bytes, hashes, where) {
  const want = hashes?.[name];
  if (!want) return;
  const got = await sha256Hex(bytes);
  if (got !== want.toLowerCase()) {
    throw new Error(`${where}: sha256 mismatch (expected ${want}, got ${got})`);
  }
}

/** Tracks bytes over all files for progress events. */
class Progress {
  constructor(report) {
    this.report = report ?? (() => {});
    this.files = new Map();
  }
  update(file, bytes, total, cached = false) {
    this.files.set(file, { bytes, total: Math.max(total, bytes) });
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
  if (opts.dtype != null && !(opts.dtype in layout.dtypes)) layout.pick('', layout.required, opts.dtype);
  if (opts.hub) return fromHub(source, opts, progress, layout);
  if (typeof source === 'string' || source instanceof URL) {
    const s = withScheme(String(source));
    if (isNode && !/^(https?|data|blob):/.test(s)) return fromNodeDir(s, opts, progress, layout);
    return fromUrl(s, opts, progress, layout);
  }
  return fromEntries(source, opts, progress, layout);
}

/** `name → data` entries from a FileList, a File[] (folder picker paths), or a plain object. */
export function entriesOf(source) {
  const list = typeof FileList !== 'undefined' && source instanceof FileList ? [...source] : source;
  if (Array.isArray(list)) {
    return list.map((f) => {
      if (f && typeof f === 'object' && 'name' in f && 'data' in f && !(f instanceof Blob)) return [f.name, f.data];
      const rel = f.webkitRelativePath || f.name;
      // Drop the picked folder's own name: "pii/onnx/model_q4.onnx" -> "onnx/model_q4.onnx".
      return [f.webkitRelativePath ? rel.split('/').slice(1).join('/') : rel, f];
    });
  }
  if (source && typeof source === 'object') return Object.entries(source);
  throw new Error('model must be a folder URL, a FileList / File[] or an object of file name → ArrayBuffer');
}

async function bytesOf(name, data) {
  if (data instanceof Blob) return new Uint8Array(await data.arrayBuffer());
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new Error(`${name}: expected a File, Blob, ArrayBuffer or typed array`);
}

function normalizeName(name, all) {
  // Files picked one by one lose the onnx/ folder; accept them under either name.
  return all.includes(name) ? name : name.replace(/^onnx\//, '');
}

async function fromEntries(source, opts, progress, layout) {
  const entries = entriesOf(source);
  const names = entries.map(([n]) => n);
  const origin = entries[0]?.[1]?.webkitRelativePath?.split('/')[0] || 'local files';
  const configEntry = entries.find(([n]) => n === 'config.json');
  const config = configEntry ? configOf(await bytesOf(...configEntry)) : null;
  const wanted = pickFiles(origin, names.map((n) => (n.endsWith('.onnx') && !n.includes('/') ? `onnx/${n}` : n)), opts, layout, config);
  const files = [];
  for (const want of wanted) {
    const name = normalizeName(want, names);
    const data = entries.find(([n]) => n === name)[1];
    const bytes = await bytesOf(name, data);
    await checkHash(want, bytes, opts.sha256, name);
    progress.update(want, bytes.byteLength, bytes.byteLength);
    files.push({ name: want, bytes, blob: data instanceof Blob ? data : undefined });
  }
  return { origin, files };
}

async function fromNodeDir(dir, opts, progress, layout) {
  const fsName = 'node:fs/promises';
  const pathName = 'node:path';
  const fs = await import(/* @vite-ignore */ fsName);
  const path = await import(/* @vite-ignore */ pathName);
  const root = dir.startsWith('file:') ? new URL(dir).pathname : dir;
  const list = async (sub) => {
    try {
      return await fs.readdir(path.join(root, sub));
    } catch (e) {
      if (sub) return [];
      throw new Error(`${root}: ${e.code === 'ENOENT' ? 'no such folder' : e.message}`);
    }
  };
  const names = [...(await list('')), ...(await list('onnx')).map((n) => `onnx/${n}`)];
  const files = [];
  const config = names.includes('config.json') ? configOf(await fs.readFile(path.join(root, 'config.json')).catch(() => null)) : null;
  for (const name of pickFiles(root, names, opts, layout, config)) {
    const bytes = new Uint8Array(await fs.readFile(path.join(root, name)));
    await checkHash(name, bytes, opts.sha256, path.join(root, name));
    progress.update(name, bytes.byteLength, bytes.byteLength);
    files.push({ name, bytes });
  }
  return { origin: root, files };
}

const HUB = /^(www\.)?(huggingface\.co|hf\.co)(\/|$)/i;

/** A Hugging Face address typed without its scheme is absolute, not a path under the page. */
export function withScheme(source) {
  return HUB.test(source) ? `https://${source}` : source;
}

/** The folder URL of a model source, resolved against the page when it is relative. */
export function folderUrl(base) {
  const s = withScheme(base);
  return new URL(s.endsWith('/') ? s : `${s}/`, typeof location !== 'undefined' ? location.href : undefined);
}

/** What to add to a failed fetch of `url`'s message: why it may have failed. */
function fetchHint(url) {
  const page = typeof location !== 'undefined' && /^https?:$/.test(location.protocol) ? location.origin : null;
  if (!page || new URL(url).origin === page) return '';
  // Browsers say only "Failed to fetch" (or "NetworkError…", "Load failed") for a refused
  // cross-origin request; the likely causes are worth naming.
  return `. The server may not allow cross-origin requests from ${page} (CORS: it must answer with Access-Control-Allow-Origin), or it cannot be reached`;
}

/** What a 404 of `url` most likely means. */
function notFoundHint(url) {
  const u = new URL(url);
  if (HUB.test(u.host + '/') && !u.pathname.includes('/resolve/')) {
    return ' (a Hugging Face model page is not its files: use https://huggingface.co/ORG/NAME/resolve/main/)';
  }
  return ' (not found; is this a Hugging Face model folder?)';
}

/** An error for a failed download; `retry`: trying again may help (a server error, a cut-off body). */
function failure(message, { retry = false, notFound = false } = {}) {
  return Object.assign(new Error(message), { retry, notFound });
}

/**
 * GET with a clear error; `null` for 404 (and the Hub's 401 for unknown repositories) when the
 * file is optional. `label` names a model id in errors.
 */
async function get(url, signal, optional, label, timeout) {
  // `res.dog` watches the body too (readBody); a server that stops sending ends the request.
  const dog = watchdog(signal, timeout);
  let res;
  try {
    res = await fetch(url, { signal: dog.signal });
  } catch (e) {
    dog.stop();
    if (signal?.aborted) throw signal.reason;
    if (dog.timedOut) throw failure(`no answer from ${url}: ${dog.signal.reason.message} (downloadTimeout)`, { retry: true });
    throw new Error(`network error fetching ${url}: ${e.message}${fetchHint(url)}`);
  }
  const missing = res.status === 404 || (label && res.status === 401);
  if (res.ok) return Object.assign(res, { dog });
  dog.stop();
  if (missing && optional) return null;
  const name = url.split('/').at(-1);
  if (label && missing) {
    throw failure(`${label}: ${name} not found (HTTP ${res.status} for ${url}; a private or gated model needs a token, which webert does not send)`, { notFound: true });
  }
  const retry = res.status >= 500 || res.status === 429;
  const hint = res.status === 404 ? notFoundHint(url) : '';
  throw failure(`${label ? `${label}: ${name}: ` : ''}${url}: HTTP ${res.status}${hint}`, { retry, notFound: res.status === 404 });
}

/** `work()`, tried up to 3 times while its failure says trying again may help. */
async function retrying(work, signal) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (e) {
      if (!e?.retry || attempt >= 3 || signal?.aborted) throw e;
      await new Promise((ok) => setTimeout(ok, 300 * 2 ** attempt));
    }
  }
}

async function readBody(res, url, name, progress, signal) {
  const total = Number(res.headers.get('content-length')) || 0;
  if (total) progress.update(name, 0, total); // the size, before any of the body arrives
  if (!res.body) return new Uint8Array(await res.arrayBuffer().finally(() => res.dog?.stop()));
  const reader = res.body.getReader();
  const chunks = [];
  let loaded = 0;
  const { dog } = res;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      dog?.kick();
      chunks.push(value);
      loaded += value.byteLength;
      progress.update(name, loaded, total);
    }
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    const why = dog?.timedOut ? `${dog.signal.reason.message} (downloadTimeout)` : e.cause?.message ?? e.message;
    throw failure(`network error reading ${url} after ${loaded}${total ? ` of ${total}` : ''} bytes: ${why}`, { retry: true });
  } finally {
    dog?.stop();
  }
  const out = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

async function fromUrl(base, opts, progress, layout, label) {
  const root = folderUrl(base);
  const signal = opts.signal;
  const warn = (m) => progress.warn(m);
  // Node has no Cache API (where a runtime has one, it is used): ids are kept on disk there.
  const onDisk = isNode && opts.hub && typeof caches === 'undefined';
  const cache = onDisk ? await openDiskCache(opts, opts.hub, root.href, warn) : await openModelCache(opts, warn);
  if (opts.offline && !cache) throw failure(`${label ?? root.href}: no cache to read from`, { notFound: true });
  const files = new Map();
  // Files a server answered with a web page: absent when optional, an error when needed.
  const pages = [];
  const written = []; // cached by this load: a load that makes no model keeps none of them

  // One file: from the cache when whole and its hash (if given) still matches, else from the network.
  const load = async (name, optional) => {
    const url = new URL(name, root).href;
    const hit = cache && (await cache.read(url));
    if (hit) {
      try {
        await checkHash(name, hit, opts.sha256, url);
        progress.update(name, hit.byteLength, hit.byteLength, true);
        files.set(name, hit);
        return true;
      } catch {
        await cache.delete(url);
      }
    }
    if (opts.offline) {
      if (optional) return false;
      throw failure(`${label ?? url}: ${name} is not in the cache`, { notFound: true });
    }
    const bytes = await retrying(async () => {
      const res = await get(url, signal, optional, label, opts.downloadTimeout);
      if (!res) return null;
      const body = await readBody(res, url, name, progress, signal);
      const notFile = isHtml(body, res) ? 'HTML' : notWeights(name, body);
      const wrong = notFile === 'HTML' ? 'an HTML page' : notFile && `something else (${notFile})`;
      if (wrong) {
        pages.push(name);
        if (optional) return null;
        const start = JSON.stringify(new TextDecoder().decode(body.subarray(0, 60)));
        throw failure(`${label ?? url}: the server answered ${name} with ${wrong} (content-type ${res.headers.get('content-type')}, starts ${start}), not the file; ` +
          `a server that answers a missing file with its index.html (Vite, SPA fallbacks) or another page does that: check that ${url} exists`, { notFound: true });
      }
      checkJson(name, body, res, label ?? url);
      return body;
    }, signal);
    if (!bytes) return false;
    await checkHash(name, bytes, opts.sha256, url);
    await cache?.write(url, bytes);
    written.push(url);
    files.set(name, bytes);
    return true;
  };

  const manifestUrl = new URL(MANIFEST, root).href;
  // The dtype ("" for the default) names a choice of files, as in the CLI's manifest.
  const key = opts.weights ?? opts.dtype ?? '';
  const known = cache && (await cache.manifest(manifestUrl))[key];
  if (Array.isArray(known) && known.every((n) => typeof n === 'string')) {
    // (The CLI's manifest lists the shard index, which the engine does not read.)
    await Promise.all(known.filter((n) => n !== 'model.safetensors.index.json').map((n) => load(n, false)));
  } else if (opts.offline) {
    throw failure(`${label ?? root.href}: not in the cache (no list of its files for ${key ? `\`${key}\`` : 'the default dtype'})`, { notFound: true });
  } else {
    // config.json first: its absence says best that this is no model folder.
    const [first, ...required] = layout.required;
    try {
      await load(first, false);
      const optional = layout.text.filter((n) => !layout.required.includes(n));
      await Promise.all([...required.map((n) => load(n, false)), ...optional.map((n) => load(n, true))]);
      await findWeights({ ...opts, preferred: defaultDtype(opts, configOf(files.get('config.json')), layout) }, load, root, layout, label, pages);
    } catch (e) {
      await Promise.all(written.map((url) => cache?.delete(url).catch(() => {})));
      throw e;
    }
    await cache?.setManifest(manifestUrl, key, [...files.keys()]);
  }
  const order = [...files.keys()].sort();
  // Files that made no model (the engine refused them), cached before or now, leave the cache.
  const forget = async () => cache?.forget(manifestUrl, key);
  const origin = label ?? root.href.replace(/\/$/, '');
  // `cacheError`: why caching stopped; `stored`: every file is in the cache (for a reload).
  const stored = !!cache && !cache.error;
  // `written`: what this load put in the cache, for the page to check it was kept (cache.js).
  return { origin, files: order.map((name) => ({ name, bytes: files.get(name) })), forget, cacheError: cache?.error ?? null, stored, written: stored ? written : [] };
}

/**
 * Fetches the weights: `opts.weights`, or the files of `opts.dtype` (`fp32`: safetensors, else
 * onnx/model.onnx), or the first present in the engine's order of preference; sharded
 * safetensors via their index. Only the weights used are downloaded.
 */
async function findWeights(opts, load, root, layout, label, pages = []) {
  const { weights, dtype, signal } = opts;
  if (weights) {
    await load(weights, false);
    return;
  }
  const filesOf = (d) => (d === 'fp32' ? ['model.safetensors', layout.dtypes.fp32] : [layout.dtypes[d]]);
  const first = opts.preferred ? filesOf(opts.preferred) : [];
  const candidates = dtype ? filesOf(dtype) : [...first, ...layout.weights.filter((n) => !first.includes(n))];
  const missed = [];
  for (const name of candidates) {
    signal?.throwIfAborted();
    if (name === 'onnx/model.onnx') {
      const indexUrl = new URL('model.safetensors.index.json', root).href;
      const index = await get(indexUrl, signal, true, label, opts.downloadTimeout);
      const body = index && (await readBody(index, indexUrl, 'model.safetensors.index.json', { update() {} }, signal));
      if (!body) missed.push('model.safetensors.index.json');
      else if (isHtml(body, index) || !shardNames(body)) pages.push('model.safetensors.index.json');
      else {
        const shards = shardNames(body);
        await Promise.all(shards.map((s) => load(s, false)));
        return;
      }
    }
    if (await load(name, true)) {
      if (missed.length && !isNode) {
        // Each miss is a red 404 line in the console; say why, and how to skip them.
        const d = Object.keys(layout.dtypes).find((k) => layout.dtypes[k] === name);
        console.info(`webert: ${label ?? root.href} has no ${missed.join(', ')} (the 404s above: webert looked for the weights in order), it loads ${name}${d ? `; pass { dtype: '${d}' } to ask for it directly` : ''}`);
      }
      return;
    }
    missed.push(name);
  }
  const where = label ?? root.href;
  const html = pages.length ? `; the server answered ${pages.join(', ')} with an HTML page or other body, not the file, as servers do for a missing file` : '';
  if (!dtype) throw new Error(`${where}: no weights found (tried model.safetensors, model.safetensors.index.json and onnx/model*.onnx${html})`);
  // Say which weights there are (HEAD requests), in the engine's words.
  const present = await Promise.all(layout.weights.map(async (name) => {
    const dog = watchdog(signal, opts.downloadTimeout);
    const res = await fetch(new URL(name, root).href, { method: 'HEAD', signal: dog.signal }).catch(() => null).finally(dog.stop);
    return res?.ok && !/text\/html/i.test(res.headers.get('content-type') ?? '') ? name : null;
  }));
  layout.pick(where, [...layout.required, ...present.filter(Boolean)], dtype);
  throw new Error(`${where}: no ${dtype} weights`);
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
    return;
  }
  const root = folderUrl(base).href;
  const cache = await caches.open(CACHE_NAME);
  for (const req of await cache.keys()) if (req.url.startsWith(root)) await cache.delete(req);
}
