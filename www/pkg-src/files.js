// Gathers a model folder's files as bytes: from a base URL (streamed with progress, kept in the
// Cache API), from File/Blob objects (folder picker, drag and drop), from ArrayBuffers, or from a
// directory path in Node. Only the files the engine reads are fetched.

const CACHE_NAME = 'webert-models-v1';
const MANIFEST = '.webert-files.json';
// Which files to read comes from the engine (`modelFiles()` of the wasm glue), as a layout
// `{ required, text, weights }`: the files a folder must have, the text files read when
// present, and the weight files in the engine's order of preference.

export const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined';

/** The files of `names` that the engine needs: config, tokenizer, and one set of weights. */
export function pickFiles(names, weights, layout) {
  const has = new Set(names);
  for (const r of layout.required) {
    if (!has.has(r)) throw new Error(`the model folder has no ${r} (found: ${names.join(', ') || 'nothing'})`);
  }
  const picked = layout.text.filter((n) => has.has(n));
  if (weights) {
    if (!has.has(weights)) throw new Error(`the model folder has no ${weights}`);
    return [...picked, weights];
  }
  const shards = names.filter((n) => n.endsWith('.safetensors')).sort();
  if (shards.length) return [...picked, ...shards];
  const onnx = layout.weights.find((w) => has.has(w)) ?? names.find((n) => n.endsWith('.onnx'));
  if (!onnx) {
    throw new Error('the model folder has no weights: expected model.safetensors, *.safetensors shards or onnx/model*.onnx');
  }
  return [...picked, onnx];
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
    this.report({ stage: 'download', file, bytes: b, total: t, cached });
  }
}

/**
 * All files for a model source, as `[{ name, bytes }]`, with `origin` for error messages and
 * `again` (a function returning the same source for a reload).
 */
export async function gatherFiles(source, opts, report, layout) {
  const progress = new Progress(report);
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

function normalizeName(name, all) {
  // Files picked one by one lose the onnx/ folder; accept them under either name.
  return all.includes(name) ? name : name.replace(/^onnx\//, '');
}

async function fromEntries(source, opts, progress, layout) {
  const entries = entriesOf(source);
  const names = entries.map(([n]) => n);
  const wanted = pickFiles(names.map((n) => (n.endsWith('.onnx') && !n.includes('/') ? `onnx/${n}` : n)), opts.weights, layout);
  const files = [];
  for (const want of wanted) {
    const name = normalizeName(want, names);
    const data = entries.find(([n]) => n === name)[1];
    let bytes;
    if (data instanceof Blob) bytes = new Uint8Array(await data.arrayBuffer());
    else if (data instanceof ArrayBuffer) bytes = new Uint8Array(data);
    else if (ArrayBuffer.isView(data)) bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    else throw new Error(`${name}: expected a File, Blob, ArrayBuffer or typed array`);
    await checkHash(want, bytes, opts.sha256, name);
    progress.update(want, bytes.byteLength, bytes.byteLength);
    files.push({ name: want, bytes, blob: data instanceof Blob ? data : undefined });
  }
  const origin = entries[0]?.[1]?.webkitRelativePath?.split('/')[0] || 'local files';
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
  for (const name of pickFiles(names, opts.weights, layout)) {
    const bytes = new Uint8Array(await fs.readFile(path.join(root, name)));
    await checkHash(name, bytes, opts.sha256, path.join(root, name));
    progress.update(name, bytes.byteLength, bytes.byteLength);
    files.push({ name, bytes });
  }
  return { origin: root, files };
}

async function openCache(opts) {
  if (opts.cache === false || typeof caches === 'undefined') return null;
  try {
    return await caches.open(CACHE_NAME);
  } catch {
    return null; // e.g. an opaque origin: work without a cache
  }
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

/** GET with a clear error; `null` for 404 when the file is optional. */
async function get(url, signal, optional) {
  let res;
  try {
    res = await fetch(url, { signal });
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    throw new Error(`network error fetching ${url}: ${e.message}${fetchHint(url)}`);
  }
  if (res.status === 404 && optional) return null;
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}${res.status === 404 ? notFoundHint(url) : ''}`);
  return res;
}

async function readBody(res, url, name, progress, signal) {
  const total = Number(res.headers.get('content-length')) || 0;
  if (!res.body) return new Uint8Array(await res.arrayBuffer());
  const reader = res.body.getReader();
  const chunks = [];
  let loaded = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.byteLength;
      progress.update(name, loaded, total);
    }
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    throw new Error(`network error reading ${url}: ${e.message}`);
  }
  const out = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

async function fromUrl(base, opts, progress, layout) {
  const root = folderUrl(base);
  const signal = opts.signal;
  const cache = await openCache(opts);
  const files = new Map();

  // One file: from the cache when its hash (if given) still matches, else from the network.
  const load = async (name, optional) => {
    const url = new URL(name, root).href;
    const hit = cache && (await cache.match(url));
    if (hit) {
      const bytes = new Uint8Array(await hit.arrayBuffer());
      try {
        await checkHash(name, bytes, opts.sha256, url);
        progress.update(name, bytes.byteLength, bytes.byteLength, true);
        files.set(name, bytes);
        return true;
      } catch {
        await cache.delete(url);
      }
    }
    const res = await get(url, signal, optional);
    if (!res) return false;
    const bytes = await readBody(res, url, name, progress, signal);
    await checkHash(name, bytes, opts.sha256, url);
    if (cache) await cache.put(url, new Response(bytes, { headers: { 'content-type': 'application/octet-stream' } }));
    files.set(name, bytes);
    return true;
  };

  const manifestUrl = new URL(MANIFEST, root).href;
  const manifest = cache && (await cache.match(manifestUrl));
  const key = opts.weights ?? '';
  const known = manifest ? (await manifest.json())[key] : undefined;
  if (known) {
    await Promise.all(known.map((n) => load(n, false)));
  } else {
    // config.json first: its absence says best that this is no model folder.
    const [first, ...required] = layout.required;
    await load(first, false);
    const optional = layout.text.filter((n) => !layout.required.includes(n));
    await Promise.all([...required.map((n) => load(n, false)), ...optional.map((n) => load(n, true))]);
    await findWeights(opts.weights, load, root, signal, layout.weights);
    if (cache) {
      const all = manifest ? await cache.match(manifestUrl).then((r) => r.json()) : {};
      all[key] = [...files.keys()];
      await cache.put(manifestUrl, new Response(JSON.stringify(all), { headers: { 'content-type': 'application/json' } }));
    }
  }
  const order = [...files.keys()].sort();
  return { origin: root.href.replace(/\/$/, ''), files: order.map((name) => ({ name, bytes: files.get(name) })) };
}

/** Tries the weight files in order of preference; sharded safetensors via their index. */
async function findWeights(weights, load, root, signal, preference) {
  if (weights) {
    await load(weights, false);
    return;
  }
  for (const name of preference) {
    signal?.throwIfAborted();
    if (name === 'onnx/model.onnx') {
      const index = await get(new URL('model.safetensors.index.json', root).href, signal, true);
      if (index) {
        const shards = [...new Set(Object.values((await index.json()).weight_map ?? {}))].sort();
        await Promise.all(shards.map((s) => load(s, false)));
        return;
      }
    }
    if (await load(name, true)) return;
  }
  throw new Error(`${root.href}: no weights found (tried model.safetensors, model.safetensors.index.json and onnx/model*.onnx)`);
}

/** Deletes cached model files: those under `base`, or all when no base is given. */
export async function clearCache(base) {
  if (typeof caches === 'undefined') return;
  if (!base) {
    await caches.delete(CACHE_NAME);
    return;
  }
  const root = folderUrl(base).href;
  const cache = await caches.open(CACHE_NAME);
  for (const req of await cache.keys()) if (req.url.startsWith(root)) await cache.delete(req);
}
