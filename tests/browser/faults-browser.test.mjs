// Faults in headless Chromium, with the package's Web Worker and the real Cache API: a cache
// entry cut short (as a closed tab could leave it) or poisoned, a Cache API over its quota
// (Storage.overrideQuotaForOrigin), servers that stall, never answer or send HTML for weights
// (tests/mock-hub.mjs, started here); a WebGPU device (SwiftShader) lost while a batch of 32
// texts is in flight; a trap inside a call; calls after dispose(), and workers ended when no
// pipeline uses them. No test reaches the internet.
//   node --test tests/browser/faults-browser.test.mjs      (after WEBERT_WEB_FEATURES=test-hooks scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM_BACKEND, MODELS, ROOT, golden, requireModels } from './golden.mjs';
import { cachedIn, checkCacheRepair, checkReloadFromKept, checkTrapped, loadIn, tamperIn } from './fault-checks.mjs';
import { launch } from './browser.mjs';
import { serve } from '../../scripts/serve.mjs';
import { serveHub } from '../mock-hub.mjs';
import { memoryOfTree } from '../bench/soak.mjs';

requireModels();
const TINY = join(ROOT, 'tests/tiny/distilbert-seqcls');
const TEXT = 'the cat sat on the mat';
const T = { timeout: 240_000 };
let hub;
let server;
let browser;
let page;
let blank;

before(async () => {
  hub = await serveHub({ repos: Object.fromEntries(['t/cache', 't/quota', 't/stall', 't/html', 't/retained'].map((id) => [id, { dir: TINY }])) });
  blank = mkdtempSync(join(tmpdir(), 'webert-faults-page-'));
  writeFileSync(join(blank, 'index.html'), '<!doctype html><meta charset="utf-8"><title>webert faults</title>');
  server = await serve({ mounts: { '/': blank, '/pkg/': join(ROOT, 'www/pkg'), '/models/': MODELS, '/tiny/': join(ROOT, 'tests/tiny') } });
  browser = await launch();
  page = browser.page;
  await page.goto(server.url);
  // These tests count workers and the memory a dispose() returns: no spare worker waits.
  await page.evaluate(async () => {
    (await import('/pkg/webert.js')).env.spareWorkerMs = 0;
  });
});

after(async () => {
  await browser?.close();
  await server?.close();
  await hub?.close();
  rmSync(blank, { recursive: true, force: true });
});

/** Loads model id `id` (host: the mock) in the page's worker and classifies TEXT: `{ out, info, warnings }` or `{ error, ms }`. */
const load = (id, options = {}) => page.evaluate(loadIn, { id, options, host: hub.url, text: TEXT });
/** The cached entries of repo `id`: url → byte length (the manifest left out). */
const cached = (id) => page.evaluate(cachedIn, id);
/** Replaces the cached weights of `id` by their first 1000 bytes or by junk, keeping the entry's headers. */
const tamper = (id, how) => page.evaluate(tamperIn, { url: `${hub.url}/${id}/resolve/main/model.safetensors`, how });
const weightGets = (id) => hub.requests(id, 'model.safetensors').filter((r) => r.method === 'GET' && !r.path.startsWith('/cdn/')).length;

test('the Cache API: an entry cut short is fetched again; a poisoned one is dropped by the load it fails', T, async () => {
  await checkCacheRepair({ load: () => load('t/cache', { packedCache: false }), cached: () => cached('t/cache'), tamper: (how) => tamper('t/cache', how), weightGets: () => weightGets('t/cache') });
});

test('a Cache API over its quota: the model loads uncached and says so; with room again it is cached', T, async () => {
  const cdp = await browser.context.newCDPSession(page);
  const origin = new URL(server.url).origin;
  await page.evaluate(() => caches.delete('webert-models-v1'));
  // Room for the JSON files, not for the weights (119 kB); Chromium counts more than the bytes.
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 100_000 });
  try {
    const r = await load('t/quota');
    assert.equal(r.error, undefined, r.error);
    assert.match(r.info.cacheError ?? '', /QuotaExceededError/);
    assert.equal(r.warnings.length, 1, r.warnings.join('\n'));
    assert.match(r.warnings[0], /the Cache API refused to store http:\S+\/t\/quota\/resolve\/main\/\S+ \(QuotaExceededError: .*\); this model is used without caching/);
    assert.equal((await cached('t/quota'))['model.safetensors'], undefined, 'no partial weights entry');
    assert.ok(browser.logs.some((l) => l.startsWith('[warning]') && l.includes('refused to store')), 'also on the console');
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
  }
  const next = await load('t/quota');
  assert.equal(next.info.cacheError, undefined, next.error);
  assert.ok((await cached('t/quota'))['model.safetensors'] > 100_000);
  await cdp.detach();
});

test('servers that stall, never answer, or send HTML for the weights: clear errors within the download timeout, nothing cached', T, async () => {
  hub.fault('t/stall', 'model.safetensors', 'stall');
  const stalled = await load('t/stall', { downloadTimeout: 500 });
  assert.match(stalled.error ?? '', /network error reading http:\S+\/t\/stall\/resolve\/main\/model\.safetensors after \d+ of \d+ bytes: no data for 0\.5 s \(downloadTimeout\)/);
  assert.ok(stalled.ms < 15_000, `${stalled.ms} ms`);
  hub.fault('t/stall', 'model.safetensors', 'hang');
  const hung = await load('t/stall', { downloadTimeout: 500 });
  assert.match(hung.error ?? '', /no answer from http:\S+model\.safetensors: no data for 0\.5 s/);
  assert.equal((await cached('t/stall'))['model.safetensors'], undefined);
  hub.fault('t/stall', 'model.safetensors', null);
  assert.equal((await load('t/stall', { downloadTimeout: 500 })).error, undefined);

  hub.fault('t/html', 'model.safetensors', 'html');
  const html = await load('t/html');
  assert.ok(html.error, 'an HTML page is no weights');
  assert.deepEqual(await cached('t/html'), {});
  hub.fault('t/html', 'model.safetensors', null);
  assert.equal((await load('t/html')).error, undefined);
});

test('after a trap, a model the cache does not hold reloads from the bytes its worker kept, not from the network', T, async () => {
  await checkReloadFromKept({ evaluate: (fn, arg) => page.evaluate(fn, arg), hub, id: 't/retained', text: TEXT });
});

test('a device lost while a batch of 32 texts is on the GPU: every text answered, on the CPU, in order', T, async () => {
  const r = await page.evaluate(async () => {
    const { pipeline } = await import('/pkg/webert.js');
    const { testHooks } = await import('/pkg/testing.js');
    // A tiny model: the fallback is what is tested, and SwiftShader is slow.
    const model = '/tiny/distilbert-seqcls/';
    const cpu = await pipeline('feature-extraction', model, { device: 'cpu' });
    const runs = [];
    for (const [n, after] of [[32, 0], [40, 1]]) {
      const texts = Array.from({ length: n }, (_, i) => `text ${i} of ${n}: ${'lost device '.repeat(i % 4)}`);
      const want = await cpu(texts, { pooling: 'mean', normalize: true });
      // SwiftShader is the only adapter: let auto take it, without timing it against the CPU.
      const fx = await pipeline('feature-extraction', model, { device: 'auto', allowFallbackAdapter: true, probe: false, cache: false });
      const warm = await fx('on the GPU first');
      await testHooks(fx).loseDeviceDuringCall(after);
      const got = await fx(texts, { pooling: 'mean', normalize: true });
      const rows = want.tolist();
      const diff = got.tolist().map((row, i) => Math.max(...row.map((x, j) => Math.abs(x - rows[i][j]))));
      runs.push({ n, count: got.dims[0], diff, warm: warm.backend, backend: got.backend, failure: fx.gpuFailure });
      fx.dispose();
    }
    cpu.dispose();
    return runs;
  });
  for (const run of r) {
    assert.match(run.warm, /^gpu /, `${run.n} texts: the warm-up ran on the GPU`);
    assert.equal(run.count, run.n);
    assert.equal(run.backend, CHROMIUM_BACKEND, `${run.n} texts`);
    assert.match(run.failure ?? '', /device lost|destroyed|reading results back/i);
    run.diff.forEach((d, i) => assert.ok(d < 1e-3, `${run.n} texts: text ${i} differs from the CPU's by ${d}`));
  }
});

test('a trap inside a call fails that call only; dispose(): clear errors after, the worker ends with its last pipeline, memory returned', T, async () => {
  const cases = golden('pii.json').cases.slice(0, 4);
  const workers = () => page.workers().length;
  const waitFor = async (n) => {
    for (let i = 0; i < 100 && workers() !== n; i++) await new Promise((ok) => setTimeout(ok, 50));
    return workers();
  };
  // The earlier tests disposed all their pipelines: their workers end.
  const base = await waitFor(0);
  const r = await page.evaluate(async (texts) => {
    const { pipeline } = await import('/pkg/webert.js');
    const { testHooks } = await import('/pkg/testing.js');
    const o = { aggregation_strategy: 'first' };
    const ner = await pipeline('ner', '/models/pii/', { device: 'cpu' });
    const shared = await pipeline('ner', '/models/pii/', { device: 'cpu' });
    const pick = (es) => es.map((e) => [e.entity_group, e.start, e.end, e.score]);
    await testHooks(ner).trapInNextCall();
    const settled = await Promise.allSettled(texts.map((t) => ner(t, o)));
    const calls = settled.map((s) => (s.status === 'fulfilled' ? { entities: pick(s.value) } : { error: s.reason.message }));
    const after = pick(await ner(texts[0], o));
    self.fx = await pipeline('feature-extraction', '/models/minilm/', { device: 'cpu' });
    await self.fx('load it all');
    const fxWasm = await testHooks(self.fx).wasmMemory();
    ner.dispose();
    let disposed = null;
    await ner(texts[0]).catch((e) => (disposed = e.message));
    const sharedAfter = pick(await shared(texts[0], o));
    self.shared = shared;
    return { calls, after, disposed, sharedAfter, fxWasm };
  }, cases.map((c) => c.text));
  checkTrapped(r, cases);
  assert.equal(workers(), base + 2, 'the PII worker (still used) and the MiniLM one');

  // Disposing the last pipeline of a worker ends it, and its memory goes with it.
  const before = memoryOfTree(process.pid).rss;
  await page.evaluate(() => self.fx.dispose());
  assert.equal(await waitFor(base + 1), base + 1, 'the MiniLM worker ended');
  await new Promise((ok) => setTimeout(ok, 500));
  const freed = before - memoryOfTree(process.pid).rss;
  assert.ok(freed > r.fxWasm / 2, `disposing MiniLM (wasm memory ${(r.fxWasm / 2 ** 20).toFixed(0)} MiB) freed ${(freed / 2 ** 20).toFixed(0)} MiB of RSS`);
  await page.evaluate(() => self.shared.dispose());
  assert.equal(await waitFor(base), base, 'no worker is left');
});
