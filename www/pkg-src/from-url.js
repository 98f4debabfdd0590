// A model folder's files from a base URL: each read from the Cache API (or Node's disk cache)
// when kept whole, else downloaded; the list of a dtype's files kept beside them, so that a
// later load (offline too) knows what to read. Only the weights used are downloaded.

import { openModelCache } from './cache.js';
import { openDiskCache } from './disk-cache.js';
import { failure, get, readBody, retrying } from './download.js';
import { checkJson, isHtml, notWeights, shardNames } from './sniff.js';
import { configOf, defaultDtype } from './file-choice.js';
import { isWeightFile } from './packed-cache.js';
import { isNode } from './platform.js';
import { checkHash } from './sha256.js';
import { folderUrl } from './urls.js';
import { watchdog } from './watchdog.js';

const MANIFEST = '.webert-files.json';

export async function fromUrl(base, opts, progress, layout, label) {
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
  // A packed-model image of these files (packed-cache.js), where the load can use one.
  const images = opts.packedImages ? await opts.packedImages(root.href, opts) : null;
  let image = null;
  let imageOf = []; // the weight files the image stands for
  if (Array.isArray(known) && known.every((n) => typeof n === 'string')) {
    // (The CLI's manifest lists the shard index, which the engine does not read.)
    const names = known.filter((n) => n !== 'model.safetensors.index.json');
    const weights = names.filter(isWeightFile);
    // An image stands for weights the cache holds (an entry dropped since may have changed).
    const held = images && (await Promise.all(weights.map((n) => cache.has(new URL(n, root).href)))).every(Boolean);
    if (held && weights.length) {
      // The other files first: with them and the weights' kept hashes, the image's key.
      const small = names.filter((n) => !isWeightFile(n));
      await Promise.all(small.map((n) => load(n, false)));
      image = await images.lookup(new Map(small.map((n) => [n, files.get(n)])), weights, opts.sha256).catch(() => null);
      if (image) imageOf = weights;
      else await Promise.all(weights.map((n) => load(n, false)));
    } else {
      await Promise.all(names.map((n) => load(n, false)));
    }
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
  // A file downloaded again may differ from the one an image was made of.
  await images?.cache.forgetHashes(root.href, written);
  const order = [...files.keys()].sort();
  // Files that made no model (the engine refused them), cached before or now, leave the cache.
  const forget = async () => cache?.forget(manifestUrl, key);
  const origin = label ?? root.href.replace(/\/$/, '');
  // `cacheError`: why caching stopped; `stored`: every file is in the cache (for a reload).
  const stored = !!cache && !cache.error;
  // `written`: what this load put in the cache, for the page to check it was kept (cache.js).
  return { origin, files: order.map((name) => ({ name, bytes: files.get(name) })), forget, cacheError: cache?.error ?? null, stored, written: stored ? written : [], image, imageOf, images };
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
  await layout.ready;
  layout.pick(where, [...layout.required, ...present.filter(Boolean)], dtype);
  throw new Error(`${where}: no ${dtype} weights`);
}
