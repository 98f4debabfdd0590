// Packed-model images in the Cache API: the engine's CPU model with its weights already imported
// and packed for this machine's kernel, kept after a load so that a later load of the same files
// (another visit, another pipeline) reads it instead of importing and packing the weights.
//
// An image's key is the SHA-256 of every file it was built from and the `quantized` mode: a
// changed file misses. The image records the engine build and kernel that wrote it, which the
// engine checks when reading it: another build's image is refused, and replaced after the load
// (the key leaves them out so that the image is read while the module starts). The
// weights' hashes are kept per file URL in `HASHES` (written with an image, dropped whenever a
// file is downloaded again), so a later load finds its image without reading the weights.

import { sha256Hex } from './sha256.js';

export const PACKED_CACHE = 'webert-packed-v1';
/** An image goes to the cache in chunks of this many bytes, each taken from the engine between calls. */
const CHUNK = 4 * 2 ** 20;
const HASHES = '.webert-hashes.json';
const LENGTH = 'x-webert-length';

/** Files whose contents the engine imports and packs (the rest: config, tokenizer, pooling). */
export function isWeightFile(name) {
  return /\.(onnx|onnx_data|onnx\.data|safetensors)$/.test(name);
}

/** The packed-image cache for a load, or null (no Cache API, caching or images off). */
export async function openPackedCache(opts) {
  if (opts.cache === false || opts.packedCache === false || typeof caches === 'undefined') return null;
  try {
    return new PackedCache(await caches.open(PACKED_CACHE));
  } catch {
    return null;
  }
}

class PackedCache {
  constructor(cache) {
    this.cache = cache;
  }

  /** `{ url: sha256 }` of the weights whose images were written. */
  async hashes(root) {
    const res = await this.cache.match(new URL(HASHES, root).href).catch(() => null);
    const all = await res?.json().catch(() => null);
    return all && typeof all === 'object' && !Array.isArray(all) ? all : {};
  }

  async setHashes(root, change) {
    const all = change(await this.hashes(root));
    const body = JSON.stringify(all);
    await this.cache.put(new URL(HASHES, root).href, new Response(body, { headers: { 'content-type': 'application/json' } })).catch(() => {});
  }

  /** Forgets the hashes of files downloaded again (their images no longer match them). */
  async forgetHashes(root, urls) {
    if (!urls.length) return;
    const all = await this.hashes(root);
    if (urls.some((u) => u in all)) await this.setHashes(root, (h) => (urls.forEach((u) => delete h[u]), h));
  }

  /** The image's URL for these files (`{ url: sha256 }`, all of them) and mode. */
  async imageUrl(root, hashes, quantized) {
    const files = Object.keys(hashes).sort().map((u) => [u.slice(root.length), hashes[u]]);
    const key = await sha256Hex(new TextEncoder().encode(JSON.stringify({ files, quantized })));
    return new URL(`.webert-packed/${key}.bin`, root).href;
  }

  /** The image's bytes when kept whole, else null (a broken entry is deleted). */
  async read(url) {
    const res = await this.cache.match(url).catch(() => null);
    if (!res) return null;
    const bytes = await res.arrayBuffer().then((b) => new Uint8Array(b), () => null);
    if (bytes && bytes.byteLength === Number(res.headers.get(LENGTH))) return bytes;
    await this.delete(url);
    return null;
  }

  /** Streams `image` (`{ length(), done(), next(max) }`) into the cache; a failed chunk fails the write, which then stores nothing. */
  async write(url, image) {
    const body = new ReadableStream(
      {
        async pull(controller) {
          const bytes = await image.next(CHUNK);
          if (bytes.byteLength) controller.enqueue(bytes);
          if (image.done()) controller.close();
        },
      },
      { highWaterMark: 0 },
    );
    await this.cache.put(url, new Response(body, { headers: { 'content-type': 'application/octet-stream', [LENGTH]: String(image.length()) } }));
  }

  async delete(url) {
    await this.cache.delete(url).catch(() => {});
  }
}

/**
 * What a load needs to find, or later write, its image: `lookup(small, weights, sha256)` with the
 * small files read (`Map` name → bytes), the weights' names and the caller's hashes gives the
 * image's bytes or null;
 * `store(files)` before a load from the files gives what writes its image after it; `quantized` is the
 * load's mode.
 */
export function packedImages(cache, root, quantized) {
  const hashOf = async (files) => Object.fromEntries(await Promise.all([...files].map(async ([name, bytes]) => [new URL(name, root).href, await sha256Hex(bytes)])));
  return {
    cache,
    /** The image `lookup` looked for. */
    url: null,
    async lookup(small, weightNames, sha256 = {}) {
      const kept = await cache.hashes(root);
      const weights = weightNames.map((n) => new URL(n, root).href);
      if (!weights.every((u) => typeof kept[u] === 'string')) return null;
      // A caller's sha256 of a weight file is checked against the one kept: on a mismatch the
      // file is read (and fails its check there).
      if (weightNames.some((n, i) => sha256?.[n] && sha256[n].toLowerCase() !== kept[weights[i]])) return null;
      const hashes = { ...(await hashOf(small)), ...Object.fromEntries(weights.map((u) => [u, kept[u]])) };
      this.url = await cache.imageUrl(root, hashes, quantized);
      return cache.read(this.url);
    },
    /**
     * A function that writes an image (`{ length(), done(), next(max) }`: the engine's image a
     * chunk at a time, model.js) keyed by `files` (`Map` name → bytes, weights included), whose
     * digests start now: WebCrypto copies its input at once.
     */
    store(files) {
      const digests = hashOf(files);
      digests.catch(() => {});
      return async (image) => {
        const hashes = await digests;
        const url = await cache.imageUrl(root, hashes, quantized);
        // The hashes first: without its image they only cost a lookup that misses.
        const weights = Object.keys(hashes).filter((u) => isWeightFile(u));
        await cache.setHashes(root, (h) => Object.assign(h, Object.fromEntries(weights.map((u) => [u, hashes[u]]))));
        await cache.write(url, image);
        return { url, bytes: image.length() };
      };
    },
  };
}
