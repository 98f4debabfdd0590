// Hostile model sources in Node, for folder URLs and model ids alike, against a fault-injecting
// server the test starts (tests/mock-hub.mjs): a server that stalls or never answers (the
// download timeout ends it), lies about Content-Length either way, serves HTML for the weights,
// 404s one file; a wrong sha256; and, through an in-memory stand-in for the Cache API (Node has
// none), cache entries cut short, written by someone else, a manifest that does not parse, a
// cached file the engine refuses, and a cache over its quota. Each ends in a clear error or a
// recovered load, within seconds, and leaves nothing bad in the cache.
//   node --test tests/browser/sources.test.mjs      (after scripts/build_web.sh)
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MODELS, PKG, ROOT } from './golden.mjs';
import { serveHub } from '../mock-hub.mjs';

/** The Cache API as a browser has it, in memory, with a quota in bytes. */
class MemoryCache {
  constructor() {
    this.entries = new Map();
    this.quota = Infinity;
  }
  static key(r) {
    return typeof r === 'string' ? r : r.url;
  }
  async match(r) {
    const e = this.entries.get(MemoryCache.key(r));
    return e && new Response(e.body.slice(), { headers: e.headers });
  }
  async put(r, res) {
    const body = new Uint8Array(await res.arrayBuffer());
    const used = [...this.entries.values()].reduce((s, e) => s + e.body.byteLength, 0);
    if (used + body.byteLength > this.quota) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    this.entries.set(MemoryCache.key(r), { body, headers: [...res.headers] });
  }
  async delete(r) {
    return this.entries.delete(MemoryCache.key(r));
  }
  async keys() {
    return [...this.entries.keys()].map((url) => ({ url }));
  }
}
const store = new MemoryCache();
globalThis.caches = { open: async () => store, delete: async () => store.entries.clear() };

const { pipeline, env } = await import(join(PKG, 'webert.js'));
const TINY = join(ROOT, 'tests/tiny/distilbert-seqcls');
const TEXT = 'the cat sat on the mat';
const T = { timeout: 60_000 };
const REPOS = ['t/ok', 't/stall', 't/hang', 't/short', 't/html-weights', 't/no-tokenizer', 't/cache'];
let hub;
let want;

before(async () => {
  hub = await serveHub({ repos: Object.fromEntries(REPOS.map((id) => [id, { dir: TINY }])) });
  env.remoteHost = hub.url;
  const local = await pipeline('text-classification', TINY, { cache: false });
  want = await local(TEXT, { top_k: null });
  local.dispose();
});
after(() => hub.close());
beforeEach(() => {
  store.entries.clear();
  store.quota = Infinity;
  for (const id of REPOS) for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) hub.fault(id, f, null);
});

const folder = (id) => `${hub.url}/${id}/resolve/main/`;
const gets = (id, file) => hub.requests(id, file).filter((r) => r.method === 'GET' && !r.path.startsWith('/cdn/')).length;
const cachedUrls = (id) => [...store.entries.keys()].filter((u) => u.includes(`/${id}/`));

/**
 * Loads `source` and classifies TEXT: `{ out, info, events }`, or `{ error, ms }`. Without
 * packed-model images unless `options` asks (these tests are about the files and their cache).
 */
async function load(source, options = {}) {
  const events = [];
  const t0 = performance.now();
  try {
    const clf = await pipeline('text-classification', source, { onProgress: (e) => events.push(e), packedCache: false, ...options });
    const out = await clf(TEXT, { top_k: null });
    const { info } = clf;
    clf.dispose();
    return { out, info, events };
  } catch (e) {
    return { error: e.message, ms: performance.now() - t0 };
  }
}

/** Both kinds of source for a repo of the mock: its folder URL, and its id. */
const SOURCES = [['folder URL', folder], ['model id', (id) => id]];

test('a dtype asks the server for its files only: no probe, no 404, nothing twice', T, async () => {
  for (const [kind, source] of SOURCES) {
    for (const dtype of ['fp32', undefined]) {
      const from = hub.log.length;
      const ok = await load(source('t/ok'), { dtype, cache: false });
      assert.equal(ok.error, undefined, ok.error);
      const asked = hub.log.slice(from).filter((r) => !r.path.startsWith('/cdn/')).map((r) => `${r.method} ${r.path.split('/resolve/main/')[1]}`);
      // The folder has these four (tests/tiny/distilbert-seqcls); safetensors is fp32's first choice.
      assert.deepEqual(asked.sort(), ['GET config.json', 'GET model.safetensors', 'GET tokenizer.json', 'GET tokenizer_config.json'], `${kind}, dtype ${dtype}`);
    }
  }
});

test('a connection closed before any answer (an idle kept-alive one the server drops) is tried again', T, async () => {
  for (const [kind, src] of SOURCES) {
    hub.fault('t/ok', 'config.json', 'reset', 1);
    const from = hub.log.length;
    const ok = await load(src('t/ok'), { cache: false });
    assert.equal(ok.error, undefined, `${kind}: ${ok.error}`);
    assert.deepEqual(ok.out, want, kind);
    const asked = hub.log.slice(from).filter((r) => r.path.endsWith('/config.json')).length;
    assert.equal(asked, 2, `${kind}: config.json asked twice`);
    // Every time: three tries, then the error names the cause.
    hub.fault('t/ok', 'config.json', 'reset');
    const failed = await load(src('t/ok'), { cache: false });
    assert.match(failed.error ?? '', /network error fetching http:\S+\/config\.json: fetch failed \((UND_ERR_SOCKET|ECONNRESET)/, kind);
    hub.fault('t/ok', 'config.json', null);
  }
});

test('a server that stalls mid-file, or never answers, ends in a clear error after the download timeout, then loads', T, async () => {
  for (const [kind, src] of SOURCES) {
    hub.fault('t/stall', 'model.safetensors', 'stall');
    const stalled = await load(src('t/stall'), { downloadTimeout: 300 });
    assert.match(stalled.error ?? '', /network error reading http:\S+\/t\/stall\/resolve\/main\/model\.safetensors after \d+ of \d+ bytes: no data for 0\.3 s \(downloadTimeout\)/, kind);
    assert.ok(stalled.ms < 10_000, `${kind}: ${stalled.ms} ms`);
    hub.fault('t/stall', 'model.safetensors', 'hang');
    const hung = await load(src('t/stall'), { downloadTimeout: 300 });
    assert.match(hung.error ?? '', /no answer from http:\S+\/t\/stall\/resolve\/main\/model\.safetensors: no data for 0\.3 s \(downloadTimeout\)/, kind);
    assert.deepEqual(cachedUrls('t/stall').filter((u) => u.endsWith('model.safetensors')), [], kind);
    // A stall once is tried again: the load recovers.
    hub.fault('t/stall', 'model.safetensors', 'stall', 1);
    const recovered = await load(src('t/stall'), { downloadTimeout: 300 });
    assert.equal(recovered.error, undefined, `${kind}: ${recovered.error}`);
    assert.deepEqual(recovered.out, want);
    store.entries.clear();
  }
  // A config that never comes back, too (the first file read).
  hub.fault('t/hang', 'config.json', 'hang');
  const hung = await load('t/hang', { downloadTimeout: 200 });
  assert.match(hung.error ?? '', /no answer from http:\S+\/t\/hang\/resolve\/main\/config\.json/);
});

test('a Content-Length shorter than the file (a body that looks whole) is refused by the engine and not kept', T, async () => {
  for (const [kind, src] of SOURCES) {
    hub.fault('t/short', 'model.safetensors', 'short-length');
    const r = await load(src('t/short'));
    assert.ok(r.error, kind);
    assert.match(r.error, /safetensors|model\.safetensors/, kind);
    assert.deepEqual(cachedUrls('t/short').filter((u) => !u.endsWith('.webert-files.json')), [], `${kind}: nothing of the load stays cached`);
    hub.fault('t/short', 'model.safetensors', null);
    const ok = await load(src('t/short'));
    assert.equal(ok.error, undefined, ok.error);
    assert.deepEqual(ok.out, want);
    store.entries.clear();
  }
  // A Content-Length past the body: a clear network error (three attempts).
  hub.fault('t/short', 'model.safetensors', 'lying-length');
  const lying = await load(folder('t/short'));
  assert.match(lying.error ?? '', /network error reading http:\S+model\.safetensors after \d+ of \d+ bytes/);
});

test('HTML for the weights or for a JSON file, and a 404 for one file: clear errors, nothing cached', T, async () => {
  for (const [kind, src] of SOURCES) {
    hub.fault('t/html-weights', 'model.safetensors', 'html');
    const weights = await load(src('t/html-weights'));
    assert.match(weights.error ?? '', /no weights found \(.*the server answered model\.safetensors with an HTML page/, kind);
    assert.deepEqual(cachedUrls('t/html-weights').filter((u) => !u.endsWith('.webert-files.json')), [], `${kind}: a load that makes no model keeps nothing`);
    hub.fault('t/html-weights', 'model.safetensors', null);
    hub.fault('t/html-weights', 'tokenizer.json', 'html');
    const json = await load(src('t/html-weights'));
    assert.match(json.error ?? '', /the server answered tokenizer\.json with an HTML page \(content-type text\/html; charset=utf-8, starts "<!doctype html>.*\), not the file/, kind);
    assert.ok(!cachedUrls('t/html-weights').some((u) => u.endsWith('tokenizer.json')), kind);
    hub.fault('t/html-weights', 'tokenizer.json', null);
    hub.fault('t/no-tokenizer', 'tokenizer.json', 'missing');
    const missing = await load(src('t/no-tokenizer'));
    assert.match(missing.error ?? '', /tokenizer\.json/, kind);
    assert.match(missing.error ?? '', kind === 'model id' ? /not found \(HTTP 404/ : /HTTP 404 \(not found; is this a Hugging Face model folder\?\)/, kind);
    hub.fault('t/no-tokenizer', 'tokenizer.json', null);
    const ok = await load(src('t/no-tokenizer'));
    assert.deepEqual(ok.out, want, `${kind}: ${ok.error}`);
    store.entries.clear();
  }
});

test('a wrong sha256 is an error and nothing of that file is cached; a cached file failing a new sha256 is fetched again', T, async () => {
  const sum = createHash('sha256').update(readFileSync(join(TINY, 'model.safetensors'))).digest('hex');
  const bad = await load('t/ok', { sha256: { 'model.safetensors': 'ab'.repeat(32) } });
  assert.match(bad.error ?? '', /model\.safetensors: sha256 mismatch \(expected abab.*, got /);
  assert.ok(!cachedUrls('t/ok').some((u) => u.endsWith('model.safetensors')));
  const good = await load('t/ok', { sha256: { 'model.safetensors': sum } });
  assert.deepEqual(good.out, want);
  assert.ok(cachedUrls('t/ok').some((u) => u.endsWith('model.safetensors')));
  // The cached copy fails the next (wrong) hash: it is fetched again, fails again, and is not kept.
  const n = gets('t/ok', 'model.safetensors');
  const again = await load('t/ok', { sha256: { 'model.safetensors': 'cd'.repeat(32) } });
  assert.match(again.error ?? '', /sha256 mismatch/);
  assert.equal(gets('t/ok', 'model.safetensors'), n + 1);
  assert.ok(!cachedUrls('t/ok').some((u) => u.endsWith('model.safetensors')));
});

test('a packed-model image: written after a load, read by the next without the weights; a sha256 is checked against the hash kept with it', T, async () => {
  const id = 't/cache';
  const images = () => cachedUrls(id).filter((u) => u.includes('/.webert-packed/'));
  const first = await load(id, { packedCache: true });
  assert.deepEqual(first.out, want);
  for (let i = 0; i < 100 && !images().length; i++) await new Promise((ok) => setTimeout(ok, 50));
  assert.equal(images().length, 1, 'one image written');
  const weightsRead = (r) => r.events.filter((e) => e.stage === 'download' && e.file === 'model.safetensors').length;
  assert.ok(weightsRead(first) > 0);
  const second = await load(id, { packedCache: true });
  assert.equal(second.info.packedImage, 'read');
  assert.deepEqual(second.out, want);
  assert.equal(weightsRead(second), 0, 'the weights are not read');
  const sum = createHash('sha256').update(readFileSync(join(TINY, 'model.safetensors'))).digest('hex');
  const checked = await load(id, { packedCache: true, sha256: { 'model.safetensors': sum.toUpperCase() } });
  assert.equal(checked.info.packedImage, 'read');
  // A hash the file does not have: the file is read and fails its check, as without an image.
  const wrong = await load(id, { packedCache: true, sha256: { 'model.safetensors': 'cd'.repeat(32) } });
  assert.match(wrong.error ?? '', /model\.safetensors: sha256 mismatch/);
  // Without its kept hash (the file downloaded again), the image is not looked for.
  const uncached = await load(id, { packedCache: true, cache: false });
  assert.equal(uncached.info.packedImage, undefined);
  // The failed check dropped the cached weights: the image, which stood for them, is not read.
  const again = await load(id, { packedCache: true });
  assert.equal(again.info.packedImage, undefined);
  assert.ok(weightsRead(again) > 0);
  assert.deepEqual(again.out, want);
  // Its image is written anew (after the load: waited for, so that it lands in this test).
  const kept = () => JSON.parse(new TextDecoder().decode(store.entries.get(`${folder(id)}.webert-hashes.json`)?.body ?? new Uint8Array()) || '{}');
  for (let i = 0; i < 100 && !kept()[`${folder(id)}model.safetensors`]; i++) await new Promise((ok) => setTimeout(ok, 50));
  assert.equal(kept()[`${folder(id)}model.safetensors`], sum);
  for (let i = 0; i < 100 && images().length < 1; i++) await new Promise((ok) => setTimeout(ok, 50));
  await new Promise((ok) => setTimeout(ok, 200));
});

test('the cache: an entry cut short, one without our length, a broken manifest, a refused file are all fetched again', T, async () => {
  const id = 't/cache';
  const url = (f) => `${folder(id)}${f}`;
  const first = await load(id);
  assert.deepEqual(first.out, want);
  assert.equal(first.info.cacheError, undefined);
  const whole = store.entries.get(url('model.safetensors'));
  assert.ok(whole, 'the weights are cached');
  const loadAgain = async (what) => {
    const n = gets(id, 'model.safetensors');
    const r = await load(id);
    assert.equal(r.error, undefined, `${what}: ${r.error}`);
    assert.deepEqual(r.out, want, what);
    assert.deepEqual(store.entries.get(url('model.safetensors')).body, whole.body, `${what}: the entry is whole again`);
    return gets(id, 'model.safetensors') - n;
  };
  assert.equal(await loadAgain('from the cache'), 0, 'a whole cache answers alone');

  // Cut short (a write interrupted by a closed tab), keeping its headers.
  store.entries.set(url('model.safetensors'), { ...whole, body: whole.body.slice(0, 1000) });
  assert.equal(await loadAgain('truncated entry'), 1);
  // An entry without our length header (written by another version or another library).
  store.entries.set(url('model.safetensors'), { body: whole.body.slice(), headers: [['content-type', 'application/octet-stream']] });
  assert.equal(await loadAgain('foreign entry'), 1);
  // A cached JSON file cut short, with a length that matches what is left: it does not parse.
  const cfg = store.entries.get(url('config.json'));
  const cut = cfg.body.slice(0, 10);
  store.entries.set(url('config.json'), { body: cut, headers: [['x-webert-length', String(cut.byteLength)]] });
  const n = gets(id, 'config.json');
  assert.deepEqual((await load(id)).out, want, 'cut config.json');
  assert.equal(gets(id, 'config.json'), n + 1);
  // A manifest that does not parse.
  store.entries.set(url('.webert-files.json'), { body: new TextEncoder().encode('{"":["config.js'), headers: [] });
  assert.deepEqual((await load(id)).out, want, 'broken manifest');
  assert.deepEqual(JSON.parse(new TextDecoder().decode(store.entries.get(url('.webert-files.json')).body))[''].sort(), ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);

  // A cached file whose length is right but which the engine refuses (poisoned): the failed load
  // drops every file it used, so the next load fetches them and works.
  const junk = new Uint8Array(whole.body.byteLength).fill(7);
  store.entries.set(url('model.safetensors'), { body: junk, headers: whole.headers });
  const poisoned = await load(id);
  assert.ok(poisoned.error, 'the engine refuses the junk weights');
  assert.deepEqual(cachedUrls(id).filter((u) => !u.endsWith('.webert-files.json')), [], 'the load dropped what it read');
  assert.equal(await loadAgain('after a poisoned entry'), 1);
});

test('a cache over its quota: the model loads uncached, says so (progress warning, info.cacheError), keeps no partial entry', T, async () => {
  store.quota = 20_000; // the JSON files fit, the weights (119 kB) do not
  const warned = [];
  const warn = console.warn;
  console.warn = (m) => warned.push(String(m));
  let r;
  try {
    r = await load('t/ok');
  } finally {
    console.warn = warn;
  }
  assert.equal(r.error, undefined, r.error);
  assert.deepEqual(r.out, want);
  assert.match(r.info.cacheError ?? '', /^QuotaExceededError: /);
  const warning = r.events.find((e) => e.stage === 'warning');
  assert.ok(warning, `no warning event in ${JSON.stringify(r.events.map((e) => e.stage))}`);
  assert.match(warning.message, /the Cache API refused to store http:\S+model\.safetensors \(QuotaExceededError: .*\); this model is used without caching/);
  assert.equal(warned.length, 1, warned.join('\n'));
  assert.ok(!cachedUrls('t/ok').some((u) => u.endsWith('model.safetensors')), 'no partial weights entry');
  assert.ok(r.events.some((e) => e.stage === 'ready'));
  // With room again, the next load caches it.
  store.quota = Infinity;
  const next = await load('t/ok');
  assert.equal(next.info.cacheError, undefined);
  assert.ok(cachedUrls('t/ok').some((u) => u.endsWith('model.safetensors')));
});

test("a server that answers every missing file with its index.html (Vite, SPA fallbacks): the files there load", T, async () => {
  const { createServer } = await import('node:http');
  const { readFile } = await import('node:fs/promises');
  const page = '<!DOCTYPE html>\n<html><head><title>app</title></head><body><div id="app"></div></body></html>';
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = path.startsWith('/models/tiny/') && !path.includes('..') ? join(TINY, path.slice('/models/tiny/'.length)) : null;
    const body = file && (await readFile(file).catch(() => null));
    res.writeHead(200, { 'Content-Type': body ? 'application/octet-stream' : 'text/html' });
    res.end(req.method === 'HEAD' ? undefined : body ?? page);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  try {
    const url = `http://127.0.0.1:${server.address().port}/models/tiny/`;
    // No dtype: safetensors is found among the probed names, none of the HTML answers is kept.
    const ok = await load(url);
    assert.equal(ok.error, undefined, ok.error);
    assert.deepEqual(ok.out, want);
    assert.ok([...store.entries.keys()].every((u) => !u.includes('/onnx/')), 'no page cached as weights');
    // A dtype whose file is missing: the HTML answer is named, not parsed as weights.
    const q4 = await load(url, { dtype: 'q4' });
    assert.match(q4.error ?? '', /no q4 weights|model_q4\.onnx/, q4.error);
    const named = await load(url, { weights: 'onnx/model_q4.onnx' });
    assert.match(named.error ?? '', /the server answered onnx\/model_q4\.onnx with an HTML page \(content-type text\/html, starts "<!DOCTYPE html>.*\), not the file; a server that answers a missing file with its index\.html/);
  } finally {
    server.close();
  }
});

test('a server that answers missing files with 200 and a text or a JSON error: weights are told by their bytes', T, async () => {
  const { createServer } = await import('node:http');
  const { readFile } = await import('node:fs/promises');
  const PII = join(MODELS, 'pii');
  const answers = { text: ['text/plain', 'Not Found'], json: ['application/json', '{"error":"Entry not found"}'] };
  const server = createServer(async (req, res) => {
    const [, kind, file] = decodeURIComponent(new URL(req.url, 'http://x').pathname).match(/^\/(\w+)\/(.*)$/) ?? [];
    const body = file && !file.includes('..') && (await readFile(join(PII, file)).catch(() => null));
    const [type, missing] = answers[kind] ?? ['text/plain', ''];
    res.writeHead(200, { 'Content-Type': body ? 'application/octet-stream' : type });
    res.end(body ?? missing);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const text = 'My name is John Smith.';
  const local = await pipeline('ner', PII, { cache: false });
  const entities = await local(text);
  local.dispose();
  try {
    for (const kind of Object.keys(answers)) {
      const url = `http://127.0.0.1:${server.address().port}/${kind}/`;
      // No dtype: the probes answered with that body are passed over, the folder's q4 file loads.
      const ner = await pipeline('ner', url, { cache: false });
      assert.deepEqual(await ner(text), entities, kind);
      assert.deepEqual(ner.info.files.filter((f) => /\.(onnx|safetensors)$/.test(f)), ['onnx/model_q4.onnx'], kind);
      ner.dispose();
      // A file asked for by name: the error says what came instead, before the engine sees it.
      await assert.rejects(pipeline('ner', url, { weights: 'onnx/model.onnx', cache: false }),
        /the server answered onnx\/model\.onnx with something else \(not an ONNX protobuf\) \(content-type \S+, starts "/, kind);
      await assert.rejects(pipeline('ner', url, { weights: 'model.safetensors', cache: false }),
        /the server answered model\.safetensors with something else \(no safetensors header\)/, kind);
    }
  } finally {
    server.close();
  }
});

test("env.useBrowserCache = false (transformers.js's name) keeps downloads out of the Cache API", T, async () => {
  env.useBrowserCache = false;
  try {
    const ok = await load('t/cache');
    assert.equal(ok.error, undefined, ok.error);
    assert.deepEqual(cachedUrls('t/cache'), []);
  } finally {
    env.useBrowserCache = true;
  }
  await load('t/cache');
  assert.ok(cachedUrls('t/cache').length > 0, 'cached again by default');
});
