// The Cache API side of model downloads, made safe against what a browser can leave behind:
// every entry carries its length (`x-webert-length`), and an entry that is shorter or longer
// (a write cut off by a closed tab, a foreign or older entry), or a `.json` that does not parse,
// is dropped and fetched again. A write the browser refuses (quota exceeded, private mode) turns
// caching off for the rest of the load, which goes on and says so once. The manifest (which
// files a folder's weights choice needs) is read defensively: one that does not parse is dropped.

import { PACKED_CACHE } from './packed-cache.js';

export const CACHE_NAME = 'webert-models-v1';
const LENGTH = 'x-webert-length';

/** The model cache for one load, or null where there is none (option, no Cache API, opaque origin). */
export async function openModelCache(opts, warn) {
  if (opts.cache === false || typeof caches === 'undefined') return null;
  try {
    return new ModelCache(await caches.open(CACHE_NAME), warn);
  } catch {
    return null; // e.g. an opaque origin: work without a cache
  }
}

export class ModelCache {
  /** `warn(message)` hears, once, why caching stopped. */
  constructor(cache, warn) {
    this.cache = cache;
    this.warn = warn;
    /** Why writing stopped (a refused write), or null. */
    this.error = null;
    /** Entries this load read or wrote, for `forget`. */
    this.used = new Set();
  }

  /** An entry's bytes when it is whole (and parses, for `.json`); a broken entry is deleted. */
  async read(url) {
    let res;
    try {
      res = await this.cache.match(url);
    } catch {
      return null;
    }
    if (!res) return null;
    let bytes = null;
    try {
      bytes = new Uint8Array(await res.arrayBuffer());
    } catch {
      // an entry whose body cannot be read is as good as missing
    }
    const want = Number(res.headers.get(LENGTH));
    if (bytes && res.headers.has(LENGTH) && bytes.byteLength === want && parses(url, bytes)) {
      this.used.add(url);
      return bytes;
    }
    await this.delete(url);
    return null;
  }

  /** Whether there is an entry for `url` (its body not read). */
  async has(url) {
    return !!(await this.cache.match(url).catch(() => null));
  }

  /** Keeps `bytes` under `url`; false once the browser refused a write (caching is then off). */
  async write(url, bytes) {
    if (this.error) return false;
    const headers = { 'content-type': 'application/octet-stream', [LENGTH]: String(bytes.byteLength) };
    try {
      await this.cache.put(url, new Response(bytes, { headers }));
      this.used.add(url);
      return true;
    } catch (e) {
      this.error = `${e?.name ?? 'Error'}: ${e?.message ?? e}`;
      this.warn?.(`webert: the Cache API refused to store ${url} (${this.error}); this model is used without caching and will be downloaded again next time`);
      // A partly written entry must not be read back as whole.
      await this.delete(url);
      return false;
    }
  }

  async delete(url) {
    this.used.delete(url);
    await this.cache.delete(url).catch(() => {});
  }

  /** The manifest (`{ key: [file names] }`), `{}` when absent or unreadable (then dropped). */
  async manifest(url) {
    const res = await this.cache.match(url).catch(() => null);
    if (!res) return {};
    try {
      const all = await res.json();
      if (all && typeof all === 'object' && !Array.isArray(all)) return all;
    } catch {
      // fall through: not JSON
    }
    await this.cache.delete(url).catch(() => {});
    return {};
  }

  /** Sets (or with `names` null, removes) `key` in the manifest at `url`. */
  async setManifest(url, key, names) {
    const all = withKey(await this.manifest(url), key, names);
    if (this.error && names) return;
    try {
      const body = JSON.stringify(all);
      await this.cache.put(url, new Response(body, { headers: { 'content-type': 'application/json', [LENGTH]: String(new TextEncoder().encode(body).byteLength) } }));
    } catch {
      // a manifest that cannot be written only costs probing the folder again next time
    }
  }

  /** Drops every entry this load used and its manifest key: files that made no model. */
  async forget(manifestUrl, key) {
    for (const url of [...this.used]) await this.delete(url);
    await this.setManifest(manifestUrl, key, null);
  }
}

/** A manifest (`{ key: [file names] }`) with `key` set to `names`, or removed when null. */
export function withKey(all, key, names) {
  if (names) all[key] = names;
  else delete all[key];
  return all;
}

function parses(url, bytes) {
  if (!new URL(url).pathname.endsWith('.json')) return true;
  try {
    JSON.parse(new TextDecoder().decode(bytes));
    return true;
  } catch {
    return false;
  }
}

// WebKit (WebKitGTK 2.50, cross-origin isolated page, automation session) drops what a dedicated
// worker stored in the Cache API when that worker ends, unless another context has the cache
// open: a model cached from its worker was gone once dispose() ended the worker. So the page
// opens the model cache before its workers load (and keeps it open), and after a load checks that
// it sees every entry the worker wrote; one it does not see is reported (`info.cacheError`, a
// warning event, the console) instead of silently downloaded again next time.
let pageCache = null;
let pagePacked = null; // the packed-model images (packed-cache.js), likewise

/**
 * Opens the model cache in this context and holds it (null where there is none). Opened anew
 * each time: a handle outlives `caches.delete` (clearCache()) and would then hold a dead cache.
 */
export function holdModelCache() {
  if (typeof caches === 'undefined') return Promise.resolve(null);
  pageCache = caches.open(CACHE_NAME).catch(() => null);
  pagePacked = caches.open(PACKED_CACHE).catch(() => null);
  return Promise.all([pageCache, pagePacked]).then(([models]) => models);
}

/** Of `urls` (entries a worker wrote), those this context does not see in the cache. */
export async function missingEntries(urls) {
  const cache = await holdModelCache();
  if (!cache) return [];
  const seen = await Promise.all(urls.map((u) => cache.match(u).then((r) => !!r, () => false)));
  return urls.filter((_, i) => !seen[i]);
}
