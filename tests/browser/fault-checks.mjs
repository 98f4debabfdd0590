// Checks shared by the Chromium fault tests (faults-browser.test.mjs) and the Firefox / WebKit
// ones (engine-faults.test.mjs): the same faults, each engine's driver around them.
import assert from 'node:assert/strict';
import { INT_SCORE_TOL, entitiesU16 } from './golden.mjs';

// Functions run in the page (any driver's evaluate(fn, arg)).

/** In the page: loads model id `id` (host: the mock) and classifies `text`: `{ out, info, warnings }` or `{ error, ms }`. */
export async function loadIn({ id, options, host, text }) {
  const { pipeline, env } = await import('/pkg/webert.js');
  env.remoteHost = host;
  const warnings = [];
  const t0 = performance.now();
  try {
    const clf = await pipeline('text-classification', id, { device: 'cpu', onProgress: (e) => e.stage === 'warning' && warnings.push(e.message), ...options });
    const out = await clf(text, { top_k: null });
    const { info } = clf;
    clf.dispose();
    return { out, info, warnings };
  } catch (e) {
    return { error: e.message, ms: performance.now() - t0 };
  }
}

/** In the page: the cached entries of `id`, url tail → byte length (the manifest left out). */
export async function cachedIn(id) {
  const c = await caches.open('webert-models-v1');
  const out = {};
  for (const r of await c.keys()) {
    if (r.url.includes(`/${id}/`) && !r.url.endsWith('.webert-files.json')) out[r.url.split('/').pop()] = (await (await c.match(r)).arrayBuffer()).byteLength;
  }
  return out;
}

/** In the page: the cached weights at `url` replaced by their first 1000 bytes or by junk. */
export async function tamperIn({ url, how }) {
  const c = await caches.open('webert-models-v1');
  const r = await c.match(url);
  const bytes = new Uint8Array(await r.arrayBuffer());
  const body = how === 'truncate' ? bytes.slice(0, 1000) : new Uint8Array(bytes.byteLength).fill(7);
  await c.put(url, new Response(body, { headers: r.headers }));
}


/** In the page: an uncached pipeline of model id `id` answers `text`, then traps in its next call: `{ out, trap }`. */
export async function trapUncachedIn({ id, host, text }) {
  const { pipeline, env } = await import('/pkg/webert.js');
  const { testHooks } = await import('/pkg/testing.js');
  env.remoteHost = host;
  self.uncached = await pipeline('text-classification', id, { device: 'cpu', cache: false });
  const out = await self.uncached(text, { top_k: null });
  await testHooks(self.uncached).trapInNextCall();
  const trap = await self.uncached(text).then(() => null, (e) => e.message);
  return { out, trap };
}

/** In the page: the trapped pipeline's next answer to `text` (its model reloaded), then dispose(). */
export async function againIn(text) {
  const out = await self.uncached(text, { top_k: null });
  self.uncached.dispose();
  return out;
}

/**
 * After a trap, an uncached model reloads from the bytes its worker kept: the same answer with
 * every file of `id` missing on the mock `hub`, and no request made. `evaluate(fn, arg)`: the
 * driver's, on a page of the package.
 */
export async function checkReloadFromKept({ evaluate, hub, id, text }) {
  const first = await evaluate(trapUncachedIn, { id, host: hub.url, text });
  assert.match(first.trap ?? '', /instance was restarted/);
  const n = hub.log.length;
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) hub.fault(id, f, 'missing');
  assert.deepEqual(await evaluate(againIn, text), first.out);
  assert.equal(hub.log.length, n, 'the reload asked the server nothing');
}

/**
 * A cached model whose weights entry is cut short (fetched again, whole in the cache after) or
 * poisoned (the load fails and drops every file it used; the next one fetches them again). The
 * callers load without packed-model images, which would stand in for the weights unread.
 * All bound to one model: `load()` → `{ out }` or `{ error }`; `cached()` → file → bytes;
 * `tamper('truncate' | 'junk')`; `weightGets()` → GETs of the weights so far.
 */
export async function checkCacheRepair({ load, cached, tamper, weightGets }) {
  const first = await load();
  assert.equal(first.error, undefined, first.error);
  const whole = (await cached())['model.safetensors'];
  assert.ok(whole > 100_000, `cached: ${JSON.stringify(await cached())}`);
  let n = weightGets();
  assert.deepEqual((await load()).out, first.out);
  assert.equal(weightGets(), n, 'from the cache alone');

  await tamper('truncate');
  const again = await load();
  assert.deepEqual(again.out, first.out, again.error);
  assert.equal(weightGets(), n + 1, 'the cut entry was fetched again');
  assert.equal((await cached())['model.safetensors'], whole, 'and is whole in the cache');

  await tamper('junk');
  const poisoned = await load();
  assert.ok(poisoned.error, 'junk weights are refused');
  assert.deepEqual(await cached(), {}, 'the failed load dropped every file it used');
  n = weightGets();
  assert.deepEqual((await load()).out, first.out);
  assert.equal(weightGets(), n + 1);
}

/**
 * What the page reported of four queued NER calls on PII `cases` whose first trapped: that call
 * failed, saying the instance restarted; the others, the call after, and a pipeline sharing the
 * model after the first was disposed answer as the goldens; the disposed one says so.
 * `r`: `{ calls: [{ entities } | { error }], after, disposed, sharedAfter }`, entities as
 * `[group, start, end, score]`.
 */
export function checkTrapped(r, cases) {
  const [trapped, ...rest] = r.calls;
  assert.match(trapped.error ?? '', /internal error \(.*a panic inside a forward pass.*\); the WebAssembly instance was restarted/s);
  const check = (what, got, c) => {
    const want = entitiesU16(c.text, c.pipeline.first);
    assert.deepEqual(got.map((e) => e.slice(0, 3)), want.map((e) => [e.entity_group, e.start, e.end]), what);
    got.forEach((e, i) => assert.ok(Math.abs(e[3] - want[i].score) < INT_SCORE_TOL, what));
  };
  rest.forEach((c, i) => check(`queued call ${i + 1}: ${c.error}`, c.entities, cases[i + 1]));
  check('after the trap', r.after, cases[0]);
  assert.match(r.disposed ?? '', /this token-classification pipeline was disposed; create a new one with pipeline\(\)/);
  check("a pipeline sharing the disposed one's model", r.sharedAfter, cases[0]);
}
