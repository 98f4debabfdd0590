// The npm package and the demo in all three browser engines (engines.mjs): Chromium, Firefox ESR
// (WebDriver BiDi) and WebKitGTK (W3C WebDriver), each Debian's own. Per engine: the build the
// feature probes pick (simd128 / relaxed SIMD / threads under cross-origin isolation), WebGPU or
// a clean CPU path, PII, MiniLM f32 (cosine >= 0.9999 against the PyTorch goldens), text
// classification and QA against the goldens, the Cache API across dispose() (a worker's cached
// files outlive it, or info and a warning say they were not kept), a page without cross-origin
// isolation, WebKit with partial relaxed SIMD, and the demo's tabs and modes answering without
// console errors, screenshots and layout checks at 1280 and 390 px. Prints each engine's median
// ms for PII and MiniLM (the same 128-token text as demo.test.mjs), and the matrix.
//   node --test tests/browser/engines.test.mjs      (after scripts/build_web.sh)
// A missing browser skips its engine, unless WEBERT_REQUIRE_BROWSERS is set (scripts/test.sh);
// WEBERT_ENGINES=firefox,webkit picks engines.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INT_SCORE_TOL, MODELS, ROOT, entitiesU16, golden, requireModels, u16 } from './golden.mjs';
import { CONSOLE_HOOK, ENGINES, missing, openEngine } from './engines.mjs';
import { assertLayout, layoutProblems } from './layout.mjs';
import { serve } from '../../scripts/serve.mjs';

requireModels();
const T = { timeout: 600_000 };
const WANT = (process.env.WEBERT_ENGINES ?? ENGINES.join(',')).split(',').filter(Boolean);
const REQUIRE = !!process.env.WEBERT_REQUIRE_BROWSERS;
// What each engine is known to offer here (Debian 12: Chromium 14x+, Firefox ESR, WebKitGTK
// 2.50): a change is a finding, so the test says so. `gpu`: navigator.gpu gives an adapter
// (Chromium: SwiftShader, a fallback adapter, which auto skips).
const EXPECT = {
  chromium: { build: 'relaxed-simd', sab: true, threads: 'relaxed-simd threads' },
  firefox: { build: 'relaxed-simd', sab: true, threads: 'relaxed-simd threads' },
  webkit: { build: 'simd128', sab: false, threads: 'simd128' },
};
const Q8_COS_TOL = 5e-3; // as demo.test.mjs: webert's q8 against onnxruntime's on the same file

let tmp;
let isolated;
let plain;
const figures = {}; // engine -> { version, medians, matrix row }
const vectors = {}; // engine -> MiniLM f32 vectors, compared across engines

before(async () => {
  // A blank page to load the package in, and MiniLM with the seeded heads as user folders.
  tmp = mkdtempSync(join(tmpdir(), 'webert-engines-'));
  mkdirSync(join(tmp, 'blank'));
  writeFileSync(join(tmp, 'blank/index.html'), '<!doctype html><html><head><meta charset="utf-8"><title>webert</title></head><body></body></html>');
  // (A URL folder has no listing: the head goes into model.safetensors, as a fine-tuned model's.)
  for (const head of ['seqcls', 'qa']) {
    mkdirSync(join(tmp, 'heads', head), { recursive: true });
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) symlinkSync(join(MODELS, 'minilm', f), join(tmp, 'heads', head, f));
    symlinkSync(join(ROOT, 'tests/heads', head, 'config.json'), join(tmp, 'heads', head, 'config.json'));
    writeFileSync(join(tmp, 'heads', head, 'model.safetensors'), mergeSafetensors([join(MODELS, 'minilm/model.safetensors'), join(ROOT, 'tests/heads', head, 'head.safetensors')]));
  }
  // The console hook: WebKit's driver reports no console messages (engines.mjs).
  const mounts = { '/': join(ROOT, 'www'), '/models/': MODELS, '/blank/': join(tmp, 'blank'), '/heads/': join(tmp, 'heads') };
  isolated = await serve({ mounts, headScript: CONSOLE_HOOK });
  plain = await serve({ mounts, headScript: CONSOLE_HOOK, isolated: false });
});

after(async () => {
  await isolated?.close();
  await plain?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  const rows = Object.entries(figures);
  if (!rows.length) return;
  console.log('# browser matrix (engine, version: feature = result)');
  for (const [engine, f] of rows) console.log(`# ${engine} ${f.version}: ${Object.entries(f.matrix ?? {}).map(([k, v]) => `${k} = ${v}`).join('; ')}`);
  for (const [engine, f] of rows) {
    if (f.medians) console.log(`# ${engine} ${f.version} CPU (${f.build}, 1 thread), batch 1 x 128 tokens, median ms: PII ${f.medians.pii}, MiniLM f32 ${f.medians.minilm}`);
  }
});

/** The tensors of several safetensors files in one. */
function mergeSafetensors(files) {
  const header = {};
  const data = [];
  let at = 0;
  for (const f of files) {
    const bytes = readFileSync(f);
    const n = Number(bytes.readBigUInt64LE(0));
    const start = 8 + n;
    for (const [name, t] of Object.entries(JSON.parse(bytes.subarray(8, start).toString()))) {
      if (name === '__metadata__') continue;
      header[name] = { ...t, data_offsets: [t.data_offsets[0] + at, t.data_offsets[1] + at] };
    }
    data.push(bytes.subarray(start));
    at += bytes.length - start;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + json.length) % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, Buffer.from(json), ...data]);
}

/** Console errors that are no fault: a 404 of an optional model file the package probes with GET. */
const realErrors = (list) => list.filter((l) => !/Failed to load resource: the server responded with a status of 404/.test(l));

/** The MiniLM goldens a single text gives (as node.test.mjs takes them). */
const minilmCases = () => golden('minilm.json').cases.filter((x) => x.text_pair === null && x.truncation_max_length === null);

const cosine = (a, b) => {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  a.forEach((x, i) => {
    ab += x * b[i];
    aa += x * x;
    bb += b[i] * b[i];
  });
  return ab / Math.sqrt(aa * bb);
};

/** In the page: the feature probes, every task on the goldens' inputs, timings. */
async function packageRun({ pii, minilm, seqcls, qa, timing }) {
  // Each step in the server's request log (serve.mjs), for a run that never answers.
  const step = (s) => fetch(`/__trace/${encodeURIComponent(s)}`).catch(() => {});
  const stages = (label) => {
    let last = null;
    return (e) => e.stage !== last && step(`${label}: ${(last = e.stage)}`);
  };
  step('packageRun');
  const { pipeline, webgpuAdapter } = await import('/pkg/webert.js');
  const { hasRelaxedSimd } = await import('/pkg/simd.js');
  const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
  const out = {
    isolated: self.crossOriginIsolated, sab: typeof SharedArrayBuffer !== 'undefined', relaxed: hasRelaxedSimd(),
    gpu: !!navigator.gpu, adapter: await webgpuAdapter(), ua: navigator.userAgent,
  };
  const ner = await pipeline('ner', '/models/pii/', { onProgress: stages('ner') });
  out.nerInfo = { wasmBuild: ner.info.wasmBuild, wasmBuildNote: ner.info.wasmBuildNote ?? null, threads: ner.info.threads, backend: ner.backend, cacheError: ner.info.cacheError ?? null };
  out.pii = [];
  for (const text of pii) out.pii.push(await ner(text, { aggregation_strategy: 'first' }));
  step('ner calls done');
  const fx = await pipeline('feature-extraction', '/models/minilm/', { dtype: 'fp32', onProgress: stages('fx') });
  out.fxInfo = { wasmBuild: fx.info.wasmBuild, backend: fx.backend };
  out.minilm = [];
  for (const text of minilm) out.minilm.push(Array.from((await fx(text, { pooling: 'mean', normalize: true })).data));
  // Short calls time the prefetch choice of the f32 GEMMs (in its first 18 to 42 forwards of
  // ≤ 64 rows, the idle-time warm-up's among them).
  const { testHooks } = await import('/pkg/testing.js');
  const short = minilm.filter((t) => t.length < 100);
  for (let i = 0; i < 50 && /being timed/.test(await testHooks(fx).weightPrefetch()); i++) await fx(short[i % short.length]);
  out.fxPrefetch = await testHooks(fx).weightPrefetch();
  out.timing = {};
  for (const [name, p] of [['pii', ner], ['minilm', fx]]) {
    const ms = [];
    for (let i = 0; i < 13; i++) ms.push((await p(timing)).ms);
    out.timing[name] = +median(ms.slice(3)).toFixed(1);
  }
  step('timing done');
  const clf = await pipeline('text-classification', '/heads/seqcls/', { onProgress: stages('clf') });
  out.seqcls = [];
  for (const input of seqcls) out.seqcls.push(await clf(input, { top_k: null }));
  const answer = await pipeline('question-answering', '/heads/qa/', { onProgress: stages('qa') });
  out.qa = [];
  for (const c of qa) out.qa.push(await answer(c.question, c.context, c.params));
  // More threads, where the page is cross-origin isolated and the engine shares memory.
  step('qa done');
  const two = await pipeline('ner', '/models/pii/', { threads: 2, onProgress: stages('two threads') });
  out.two = { threads: two.info.threads, wasmBuild: two.info.wasmBuild, threadsNote: two.info.threadsNote ?? null, first: await two(pii[0], { aggregation_strategy: 'first' }) };
  // WebGPU insisted on: an error at once where there is none, else an answer.
  const t0 = performance.now();
  out.webgpu = out.adapter?.isFallbackAdapter ? { skipped: 'fallback adapter (covered by demo.test.mjs)' }
    : await pipeline('ner', '/models/pii/', { device: 'webgpu' }).then(async (p) => ({ backend: p.backend, first: await p(pii[0], { aggregation_strategy: 'first' }) }), (e) => ({ error: e.message }));
  out.webgpu.ms = Math.round(performance.now() - t0);
  for (const p of [ner, fx, clf, answer, two]) p.dispose();
  return out;
}

/**
 * In the page: a model cached by its worker, the worker ended by dispose(), then loaded again
 * (from its packed-model image); then twice more with a spare worker: the last load takes the
 * worker the third one left; then once more after the image was damaged.
 */
async function cacheRun() {
  const { pipeline, clearCache, env } = await import('/pkg/webert.js');
  await clearCache('/models/minilm/');
  const step = (s) => fetch(`/__trace/${encodeURIComponent(s)}`).catch(() => {});
  const images = async () => (await (await caches.open('webert-packed-v1')).keys()).map((r) => r.url).filter((u) => u.includes('/models/minilm/') && u.endsWith('.bin'));
  const load = async (options = {}, written = async () => (await images()).length > 0) => {
    const events = [];
    let last = null;
    // Options of its own: a worker not shared with any other pipeline of the page.
    const p = await pipeline('feature-extraction', '/models/minilm/', {
      downloadTimeout: 29_000,
      onProgress: (e) => {
        events.push(e);
        if (e.stage !== last) step(`cacheRun: ${(last = e.stage)}`);
      },
      ...options,
    });
    const info = { cacheError: p.info.cacheError ?? null, workerReused: p.info.workerReused, packedImage: p.info.packedImage ?? null, imageMs: p.info.loadPhases.build.image_ms };
    const vector = Array.from((await p('a short text', { pooling: 'mean', normalize: true })).data);
    // The image is written after the load; a worker ended at once (spareWorkerMs 0) would cut it.
    for (let i = 0; i < 200 && !(await written()); i++) await new Promise((ok) => setTimeout(ok, 50));
    p.dispose(); // the worker ends here, or waits for the next pipeline
    const downloads = events.filter((e) => e.stage === 'download');
    return { info, vector, downloads: downloads.map((e) => !!e.cached), files: [...new Set(downloads.map((e) => e.file))].sort(), warnings: events.filter((e) => e.stage === 'warning').map((e) => e.message) };
  };
  env.spareWorkerMs = 0;
  const first = await load();
  await new Promise((ok) => setTimeout(ok, 300));
  const keys = (await (await caches.open('webert-models-v1')).keys()).map((r) => r.url.replace(/^.*\/models\//, ''));
  const written = await images();
  const second = await load();
  env.spareWorkerMs = 5000;
  const third = await load({ packedCache: false });
  const fourth = await load();
  env.spareWorkerMs = 0;
  // An entry of the right length that is no image: refused, the files loaded, a new image written.
  const packed = await caches.open('webert-packed-v1');
  const junk = new TextEncoder().encode('not a packed model image');
  await packed.put(written[0], new Response(junk, { headers: { 'x-webert-length': String(junk.byteLength) } }));
  const size = async () => (await (await packed.match(written[0]))?.arrayBuffer())?.byteLength ?? 0;
  const fifth = await load({}, async () => (await size()) > junk.byteLength);
  const rewritten = await size();
  return { first, keys, written: written.map((u) => u.replace(/^.*\/models\//, '')), second, third, fourth, fifth, rewritten };
}

/** In the page, before the package is imported: the page sees no cached entry, as if the browser dropped them. */
async function notKeptRun() {
  const match = Cache.prototype.match;
  Cache.prototype.match = function (req, o) {
    return String(req.url ?? req).includes('/models/pii/') ? Promise.resolve(undefined) : match.call(this, req, o);
  };
  const { pipeline, clearCache } = await import('/pkg/webert.js');
  await clearCache('/models/pii/');
  const warnings = [];
  const p = await pipeline('ner', '/models/pii/', { downloadTimeout: 28_000, onProgress: (e) => e.stage === 'warning' && warnings.push(e.message) });
  const r = { cacheError: p.info.cacheError ?? null, warnings, answer: (await p('Call John Smith')).length };
  p.dispose();
  return r;
}

/** In the page: no cross-origin isolation (no COOP/COEP): one thread, and why. */
async function plainRun(text) {
  const { pipeline } = await import('/pkg/webert.js');
  const p = await pipeline('ner', '/models/pii/', { threads: 2 });
  const r = { isolated: self.crossOriginIsolated, threads: p.info.threads, threadsNote: p.info.threadsNote ?? null, first: await p(text, { aggregation_strategy: 'first' }) };
  p.dispose();
  return r;
}

/** In the page: what WebKit's partial relaxed SIMD gives. */
async function buildRun() {
  const { pipeline } = await import('/pkg/webert.js');
  const { missingRelaxedOps } = await import('/pkg/simd.js');
  const p = await pipeline('feature-extraction', '/models/minilm/', { dtype: 'fp32', cache: false });
  const out = await p('a short text', { pooling: 'mean', normalize: true });
  const r = { missing: missingRelaxedOps(), wasmBuild: p.info.wasmBuild, note: p.info.wasmBuildNote ?? null, backend: out.backend, dims: out.dims };
  p.dispose();
  return r;
}

const sameEntities = (what, text, got, want) => {
  want = entitiesU16(text, want);
  assert.deepEqual(got.map((e) => [e.entity_group, e.start, e.end]), want.map((e) => [e.entity_group, e.start, e.end]), what);
  got.forEach((e, i) => assert.ok(Math.abs(e.score - want[i].score) < INT_SCORE_TOL, `${what}: score ${e.score} vs ${want[i].score}`));
};

function checkPackage(engine, r) {
  const expect = EXPECT[engine];
  const g = golden('pii.json').cases;
  assert.equal(r.isolated, true, 'the test server sends COOP/COEP');
  assert.equal(r.sab, expect.sab, `SharedArrayBuffer in ${engine}`);
  assert.equal(r.nerInfo.wasmBuild, r.relaxed ? 'relaxed-simd' : 'simd128', 'the build the probes pick');
  assert.equal(r.nerInfo.wasmBuild, expect.build, `the build ${engine} is known to run`);
  assert.equal(r.nerInfo.backend, `cpu-${expect.build}`);
  if (!r.relaxed) assert.equal(r.nerInfo.wasmBuildNote, 'no relaxed SIMD in this engine');
  assert.equal(r.nerInfo.cacheError, null);
  g.forEach((c, i) => sameEntities(`PII ${c.name}`, c.text, r.pii[i], c.pipeline.first));
  const m = minilmCases();
  m.forEach((c, i) => {
    const cos = cosine(r.minilm[i], c.pooled.mean_l2.flat());
    assert.ok(cos >= 0.9999, `MiniLM ${c.name}: cosine ${cos}`);
  });
  golden('seqcls.json').cases.forEach((c, i) => {
    const got = r.seqcls[i];
    assert.deepEqual(got.map((x) => x.label), c.pipeline.softmax.map((x) => x.label), `seqcls ${i}`);
    got.forEach((x, j) => assert.ok(Math.abs(x.score - c.pipeline.softmax[j].score) < 1e-4, `seqcls ${i} ${x.label}`));
  });
  golden('qa.json').cases.forEach((c, i) => {
    const got = r.qa[i];
    assert.equal(got.length, c.answers.length, c.name);
    got.forEach((a, j) => {
      const w = c.answers[j];
      assert.equal(a.answer, w.answer, c.name);
      assert.deepEqual([a.start, a.end], [u16(c.context, w.start), u16(c.context, w.end)], c.name);
      assert.ok(Math.abs(a.score - w.score) < 1e-4, `${c.name}: score`);
    });
  });
  // Threads: the threads build where memory can be shared, else one thread and why.
  assert.equal(r.two.wasmBuild, expect.threads);
  assert.equal(r.two.threads, r.sab ? 2 : 1);
  if (!r.sab) assert.match(r.two.threadsNote, /no SharedArrayBuffer/);
  sameEntities('PII on 2 threads', g[0].text, r.two.first, g[0].pipeline.first);
  if (!r.adapter) {
    assert.match(r.webgpu.error, /WebGPU is not available here/);
    assert.ok(r.webgpu.ms < 30_000, 'device: webgpu fails at once where there is none');
  } else if (!r.adapter.isFallbackAdapter) {
    assert.match(r.webgpu.backend, /^gpu/);
    sameEntities('PII on WebGPU', g[0].text, r.webgpu.first, g[0].pipeline.first);
  }
}

/** In the page: clicks a tab's run button, waits until that run ends; the page's error, or null. */
async function runTab(tab) {
  const panel = document.querySelector(`#panel-${tab}`);
  const n = Number(panel.dataset.runs ?? 0);
  document.querySelector(`#${tab}-run`).click();
  const t0 = performance.now();
  while (Number(panel.dataset.runs ?? 0) <= n) {
    if (performance.now() - t0 > 180_000) throw new Error(`${tab}: no answer in 180 s`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
  const e = document.querySelector(`#${tab}-error`);
  return e.hidden ? null : e.textContent;
}

/** In the page: waits until `test` (a function body's source, a boolean expression) holds. */
async function waitFor([expr, ms]) {
  const t0 = performance.now();
  while (!(0, eval)(expr)) {
    if (performance.now() - t0 > ms) throw new Error(`waited ${ms} ms for ${expr}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
  return true;
}

/** In the page: sets form controls as a user would (value + input/change events), clicks. */
function act(steps) {
  for (const [kind, sel, value] of steps) {
    const e = document.querySelector(sel);
    if (!e) throw new Error(`no ${sel}`);
    if (kind === 'click') e.click();
    else if (kind === 'check') {
      if (e.checked !== value) e.click();
    } else {
      e.value = value;
      e.dispatchEvent(new Event('input', { bubbles: true }));
      e.dispatchEvent(new Event('change', { bubbles: true }));
    }
  }
  return true;
}

async function demoRun(b, engine) {
  const shots = [];
  await b.goto(isolated.url);
  await b.evaluate(waitFor, ["document.querySelector('#backend').textContent.startsWith('CPU')", 180_000]);
  const backend = await b.evaluate(() => document.querySelector('#backend').textContent);
  // The answers, at 1280 px: each tab and mode runs once.
  await b.setViewport(1280, 900);
  await b.evaluate(act, [['check', '#ner-patterns', false]]); // the goldens are the model's own output
  const c = golden('pii.json').cases.find((x) => x.name === 'unicode');
  await b.evaluate(act, [['set', '#ner-text', c.text]]);
  assert.equal(await b.evaluate(runTab, 'ner'), null, 'PII tab error');
  const marks = await b.evaluate(() => [...document.querySelectorAll('#ner-out mark')].map((m) => [m.dataset.label, Number(m.dataset.start), Number(m.dataset.end)]));
  assert.deepEqual(marks, entitiesU16(c.text, c.pipeline.first).map((e) => [e.entity_group, e.start, e.end]), 'PII tab marks');
  assert.equal(await b.evaluate(() => document.querySelector('#ner-out').textContent), c.text);
  assert.match(await b.evaluate(() => document.querySelector('#ner-ms').textContent), /ms \(engine [\d.]+ ms, CPU · /);

  await b.evaluate(act, [['click', '#tab-cls'], ['check', 'input[name=cls-mode][value=model]', true]]);
  const zs = golden('minilm_q8.json').zero_shot.cases[0];
  await b.evaluate(act, [['set', '#cls-text', zs.sequence], ['set', '#cls-labels', zs.candidate_labels.join(', ')], ['check', '#cls-multi', false]]);
  assert.equal(await b.evaluate(runTab, 'cls'), null, 'Classification tab error');
  const ranked = await b.evaluate(() => [...document.querySelectorAll('#cls-out li')].map((l) => [l.dataset.label, Number(l.dataset.score)]));
  zs.single_label.labels.forEach((label, i) => {
    const s = ranked.find(([l]) => l === label)?.[1];
    assert.ok(Math.abs(s - zs.single_label.scores[i]) < 2e-2, `zero-shot ${label}: ${s} vs ${zs.single_label.scores[i]}`);
  });
  // Teach: the page's own examples, trained here, then a text classified by the head.
  await b.evaluate(act, [['check', '#cls-teach-mode', true], ['click', '#teach-train']]);
  await b.evaluate(waitFor, ["Number(document.querySelector('#panel-cls').dataset.trained ?? 0) > 0", 180_000]);
  assert.equal(await b.evaluate(() => (document.querySelector('#cls-error').hidden ? null : document.querySelector('#cls-error').textContent)), null, 'Teach error');
  await b.evaluate(act, [['set', '#cls-text', 'Whisk the eggs and fold in the flour.']]);
  assert.equal(await b.evaluate(runTab, 'cls'), null, 'Teach classify error');
  assert.equal(await b.evaluate(() => document.querySelector('#cls-out li')?.dataset.label), 'cooking');

  await b.evaluate(act, [['click', '#tab-qa'], ['set', '#panel-qa .loader input[type=text]', 'heads/qa/'], ['click', '#panel-qa .loader button']]);
  await b.evaluate(waitFor, ["!document.querySelector('#qa-run').disabled", 120_000]);
  const q = golden('qa.json').cases.find((x) => x.name === 'unicode');
  await b.evaluate(act, [['set', '#qa-question', q.question], ['set', '#qa-context', q.context]]);
  assert.equal(await b.evaluate(runTab, 'qa'), null, 'QA tab error');
  const best = await b.evaluate(() => {
    const m = document.querySelector('#qa-out mark');
    return { text: m.textContent, start: Number(m.dataset.start), end: Number(m.dataset.end) };
  });
  assert.deepEqual(best, { text: q.answers[0].answer, start: u16(q.context, q.answers[0].start), end: u16(q.context, q.answers[0].end) });

  await b.evaluate(act, [['click', '#tab-sim']]);
  const sim = golden('minilm_q8.json').similarity;
  await b.evaluate(act, [['set', '#sim-query', sim.query], ['set', '#sim-docs', sim.candidates.join('\n')]]);
  assert.equal(await b.evaluate(runTab, 'sim'), null, 'Similarity tab error');
  const rows = await b.evaluate(() => [...document.querySelectorAll('#sim-out li')].map((l) => [Number(l.dataset.index), Number(l.dataset.score)]));
  assert.deepEqual(rows.map((x) => x[0]), sim.ranking);
  rows.forEach(([i, s]) => assert.ok(Math.abs(s - sim.cosine[i]) < Q8_COS_TOL, `similarity ${i}`));

  // Every tab and mode at both widths: layout checks and a screenshot.
  const views = [
    ['ner', [['click', '#tab-ner'], ['check', '#ner-redact', false]]],
    ['ner-redacted', [['check', '#ner-redact', true]]],
    ['cls', [['check', '#ner-redact', false], ['click', '#tab-cls'], ['check', 'input[name=cls-mode][value=model]', true]]],
    ['cls-teach', [['check', '#cls-teach-mode', true]]],
    ['qa', [['check', 'input[name=cls-mode][value=model]', true], ['click', '#tab-qa']]],
    ['sim', [['click', '#tab-sim']]],
  ];
  for (const [width, height] of [[1280, 900], [390, 844]]) {
    await b.setViewport(width, height);
    for (const [name, steps] of views) {
      await b.evaluate(act, steps);
      const panel = `#panel-${name.split('-')[0]}`;
      await b.evaluate(waitFor, [`!document.querySelector('${panel}').hidden`, 10_000]);
      const file = `engine-${engine}-${width}-${name}.png`;
      await b.screenshot(file);
      shots.push(file);
      assertLayout(`${engine} ${width} px ${name}`, await b.evaluate(layoutProblems, panel));
    }
  }
  assert.deepEqual(realErrors(await b.errors()), [], 'console errors');
  return { backend, shots };
}

for (const engine of WANT) {
  const lacking = missing(engine);
  const skip = lacking.length && !REQUIRE ? `${engine}: ${lacking.join(', ')} missing (scripts/setup.sh installs it)` : false;

  test(`${engine}: the package picks its build, answers every task as the goldens, caches across dispose()`, { ...T, skip }, async () => {
    assert.deepEqual(lacking, [], `${engine} is required (WEBERT_REQUIRE_BROWSERS)`);
    const t0 = Date.now();
    const b = await openEngine(engine);
    try {
      await b.goto(`${isolated.url}blank/`);
      const timing = Array.from({ length: 126 }, (_, i) => ['the', 'cat', 'sat', 'on', 'a', 'mat'][i % 6]).join(' ');
      const r = await b.evaluate(packageRun, {
        pii: golden('pii.json').cases.map((c) => c.text),
        minilm: minilmCases().map((c) => c.text),
        seqcls: golden('seqcls.json').cases.map((c) => (c.text_pair === null ? c.text : { text: c.text, text_pair: c.text_pair })),
        qa: golden('qa.json').cases.map((c) => ({ question: c.question, context: c.context, params: c.params })),
        timing,
      });
      const f = (figures[engine] = { version: b.version, build: r.nerInfo.wasmBuild, medians: r.timing, matrix: {} });
      f.matrix.build = r.nerInfo.wasmBuild + (r.nerInfo.wasmBuildNote ? ` (${r.nerInfo.wasmBuildNote})` : '');
      f.matrix.threads = r.two.threads > 1 ? `${r.two.threads} (${r.two.wasmBuild})` : `1 (${r.two.threadsNote})`;
      f.matrix.webgpu = !r.gpu ? 'no navigator.gpu: CPU' : !r.adapter ? 'no adapter: CPU' : r.adapter.isFallbackAdapter ? `fallback adapter (${r.adapter.name}): auto uses the CPU` : `adapter ${r.adapter.name}: ${r.webgpu.backend ?? r.webgpu.error}`;
      vectors[engine] = r.minilm;
      checkPackage(engine, r);
      assert.match(r.fxPrefetch, /^(on|off), timed: \d+\.\d{3} of the time without$/, `${engine}: the prefetch choice timed in MiniLM's first short forwards`);
      f.matrix.prefetch = r.fxPrefetch;
      const cos = Math.min(...minilmCases().map((c, i) => cosine(r.minilm[i], c.pooled.mean_l2.flat())));
      const ref = vectors.chromium;
      const vsChromium = ref && engine !== 'chromium' ? Math.max(...r.minilm.flatMap((v, i) => v.map((x, j) => Math.abs(x - ref[i][j])))) : null;
      f.matrix.tasks = `PII, MiniLM f32 (min cosine ${cos.toFixed(6)}${vsChromium === null ? '' : vsChromium === 0 ? ', bit-identical to Chromium' : `, max |diff| vs Chromium ${vsChromium.toExponential(1)}`}), text classification, QA: as the goldens`;

      // The Cache API across the worker's end, and a browser that did not keep the entries.
      await b.goto(`${isolated.url}blank/?cache`);
      const cache = await b.evaluate(cacheRun);
      assert.ok(cache.first.downloads.length > 0 && cache.first.downloads.every((x) => !x), 'the first load downloads');
      assert.deepEqual(cache.keys.filter((k) => k.startsWith('minilm/')).sort(), ['minilm/.webert-files.json', 'minilm/config.json', 'minilm/onnx/model_quantized.onnx', 'minilm/tokenizer.json', 'minilm/tokenizer_config.json']);
      assert.ok(cache.second.downloads.length > 0 && cache.second.downloads.every((x) => x), `every file from the cache after dispose(): ${cache.second.downloads}`);
      assert.deepEqual([cache.first.warnings, cache.second.warnings, cache.first.info.cacheError], [[], [], null]);
      // A disposed pipeline's worker, kept for the next: the same answers from it.
      assert.deepEqual([cache.first, cache.second, cache.third, cache.fourth].map((l) => l.info.workerReused), [false, false, false, true]);
      assert.deepEqual(cache.fourth.vector, cache.third.vector);
      assert.ok(cosine(cache.third.vector, cache.first.vector) > 0.99999, 'the same model each time');
      // The packed-model image: written after the first load, read by the next ones without
      // reading the weights, the same answers bit for bit; a damaged one refused and replaced.
      assert.equal(cache.written.length, 1, `one image: ${cache.written}`);
      assert.match(cache.written[0], /^minilm\/\.webert-packed\/[0-9a-f]{64}\.bin$/);
      assert.deepEqual([cache.first, cache.second, cache.third, cache.fourth].map((l) => l.info.packedImage), [null, 'read', null, 'read']);
      assert.deepEqual(cache.second.files, ['config.json', 'tokenizer.json', 'tokenizer_config.json'], 'no weights read with an image');
      assert.ok(cache.third.files.includes('onnx/model_quantized.onnx'), 'packedCache: false reads the weights');
      assert.ok(cache.second.info.imageMs > 0);
      assert.deepEqual(cache.second.vector, cache.first.vector);
      assert.deepEqual(cache.fourth.vector, cache.first.vector);
      assert.match(cache.fifth.info.packedImage, /^refused \(invalid input: packed model image: not an image/);
      assert.deepEqual(cache.fifth.vector, cache.first.vector);
      assert.ok(cache.rewritten > 1_000_000, `the damaged image written anew: ${cache.rewritten} bytes`);
      await b.goto(`${isolated.url}blank/?not-kept`);
      const lost = await b.evaluate(notKeptRun);
      assert.match(lost.cacheError, /^not kept/);
      assert.ok(lost.warnings.some((w) => /did not keep \d+ of the \d+ files/.test(w)), lost.warnings.join('\n'));
      assert.ok(lost.answer > 0);
      f.matrix['Cache API'] = 'kept across dispose()';

      // No cross-origin isolation: one thread, and why.
      await b.goto(`${plain.url}blank/`);
      const p = await b.evaluate(plainRun, golden('pii.json').cases[0].text);
      assert.equal(p.isolated, false);
      assert.equal(p.threads, 1);
      assert.match(p.threadsNote, /not cross-origin isolated/);
      sameEntities('PII, not isolated', golden('pii.json').cases[0].text, p.first, golden('pii.json').cases[0].pipeline.first);
      assert.deepEqual(realErrors(await b.errors()), [], 'console errors');
    } catch (e) {
      // What the page last asked the server for: where a run that never answered stopped.
      console.error(`${engine}: the server's last requests:\n  ${isolated.requests().join('\n  ')}`);
      throw e;
    } finally {
      await b.close();
    }
    console.log(`# ${engine}: package checks in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  });

  if (engine === 'webkit') {
    test('webkit with JSC_useWasmRelaxedSIMD=1 (relaxed SIMD in part): the simd128 build, naming the missing opcodes', { ...T, skip }, async () => {
      const b = await openEngine('webkit', { env: { JSC_useWasmRelaxedSIMD: '1' } });
      try {
        await b.goto(`${isolated.url}blank/`);
        const r = await b.evaluate(buildRun);
        assert.ok(r.missing.length > 0 && r.missing.length < 20, `partial relaxed SIMD: missing ${r.missing}`);
        assert.equal(r.wasmBuild, 'simd128');
        assert.equal(r.backend, 'cpu-simd128');
        assert.equal(r.note, `this engine lacks relaxed-SIMD opcodes ${r.missing.join(', ')}`);
        assert.deepEqual(r.dims, [1, 384]);
        figures.webkit.matrix['JSC_useWasmRelaxedSIMD=1'] = `simd128 (lacks ${r.missing.length} of 20 relaxed opcodes)`;
      } finally {
        await b.close();
      }
    });
  }

  // (Chromium's: demo.test.mjs.)
  if (engine !== 'chromium') {
    test(`${engine}: the demo works offline after the first visit (service worker + Cache API)`, { ...T, skip }, async () => {
      const own = await serve({ mounts: { '/': join(ROOT, 'www'), '/models/': MODELS }, headScript: CONSOLE_HOOK });
      const b = await openEngine(engine);
      try {
        await b.goto(own.url);
        await b.evaluate(waitFor, ["document.querySelector('#backend').textContent.startsWith('CPU')", 180_000]);
        const sw = await b.evaluate(async () => ('serviceWorker' in navigator ? (await navigator.serviceWorker.ready, true) : false));
        assert.ok(sw, `${engine}: no service worker`);
        await own.close(); // nothing answers on that port any more
        await b.goto(own.url);
        await b.evaluate(waitFor, ["document.querySelector('#backend').textContent.startsWith('CPU')", 180_000]);
        const c = golden('pii.json').cases[0];
        await b.evaluate(act, [['check', '#ner-patterns', false], ['set', '#ner-text', c.text]]);
        assert.equal(await b.evaluate(runTab, 'ner'), null, 'PII tab error, offline');
        const marks = await b.evaluate(() => [...document.querySelectorAll('#ner-out mark')].map((m) => [m.dataset.label, Number(m.dataset.start), Number(m.dataset.end)]));
        assert.deepEqual(marks, entitiesU16(c.text, c.pipeline.first).map((e) => [e.entity_group, e.start, e.end]));
        figures[engine] ??= { version: b.version, matrix: {} };
        figures[engine].matrix.offline = 'the demo reloads and answers with its server gone';
      } finally {
        await b.close();
        await own.close();
      }
    });
  }

  test(`${engine}: the demo's tabs and modes answer, without console errors; layout at 1280 and 390 px`, { ...T, skip }, async () => {
    const t0 = Date.now();
    const b = await openEngine(engine);
    try {
      const { backend, shots } = await demoRun(b, engine);
      figures[engine] ??= { version: b.version, matrix: {} };
      figures[engine].matrix.demo = `${backend}; 4 tabs answer; ${shots.length} views laid out`;
    } finally {
      await b.close();
    }
    console.log(`# ${engine}: demo checks in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  });
}
