// GEMM tilings that WebGPU timed (`gpuTilings: 'timed'`), kept in the Cache API so that the next
// page load, or another model's worker, restores them instead of timing each shape again on its
// first call. The engine checks each saved tiling against what it would time now (adapter,
// kernel choice, shape, shaders): a stale or foreign entry only means timing that shape again.
// Browsers give WebAssembly's WebGPU no adapter identity beyond an often empty description, so
// each adapter JS can tell apart (vendor, architecture, device, description) has its own entry:
// one GPU's tilings are not taken for another's (a laptop's integrated and discrete GPUs).

export const TILINGS_CACHE = 'webert-gpu-v1';

/** The entry of the adapter named `adapter` (`webgpuAdapter().name`). */
export function tilingsKey(adapter) {
  return `https://webert.invalid/gpu-tilings/${encodeURIComponent(adapter)}.json`;
}

async function open(opts) {
  if (opts.cache === false || typeof caches === 'undefined') return null;
  try {
    return await caches.open(TILINGS_CACHE);
  } catch {
    return null; // e.g. an opaque origin
  }
}

async function read(cache, key) {
  try {
    const res = await cache.match(key);
    return res ? await res.text() : null;
  } catch {
    return null;
  }
}

/** Reads the adapter's saved tilings into the instance `glue`: how many rows they have (0: none). */
export async function restoreTilings(glue, adapter, opts) {
  const cache = await open(opts);
  const key = tilingsKey(adapter);
  const text = cache && (await read(cache, key));
  if (!text) return 0;
  try {
    return glue.importGpuTilings(text);
  } catch {
    await cache.delete(key).catch(() => {}); // not tilings (a broken write): time anew
    return 0;
  }
}

/** What the instance of each runtime generation had timed when last stored. */
let stored = '';

/**
 * Stores the tilings when the instance timed new ones since the last store, merged with what
 * other workers stored meanwhile (the instance's own timings win), under a Web Lock where there
 * is one. Never throws: a refused write costs a timing next time.
 */
export async function saveTilings(glue, generation, adapter, opts) {
  try {
    const timed = glue.gpuTilingsTimed();
    const mark = `${generation}:${timed}`;
    if (timed === 0 || mark === stored) return;
    stored = mark;
    const cache = await open(opts);
    if (!cache) return;
    const key = tilingsKey(adapter);
    const merge = async () => {
      const others = await read(cache, key);
      if (others) {
        try {
          glue.importGpuTilings(others);
        } catch {
          // not tilings: overwritten below
        }
      }
      const headers = { 'content-type': 'application/json' };
      await cache.put(key, new Response(glue.exportGpuTilings(), { headers }));
    };
    // One writer at a time across this origin's workers and tabs: two merging at once would each
    // write what it read before the other's write, and one's rows would be lost.
    const locks = globalThis.navigator?.locks;
    await (locks ? locks.request(`webert-gpu-tilings ${key}`, merge) : merge());
  } catch {
    // quota, private mode, a closed worker
  }
}
