// The demo page in headless Chromium (Debian's, driven by playwright-core): each tab against the
// committed goldens, a user-supplied QA folder through the folder picker, 100 overlapping calls,
// recovery from a trapped instance, offline after the first visit, WebGPU (SwiftShader) with a
// forced device loss, a browser without WebGPU, phone width and keyboard use. Screenshots go to target/browser-artifacts/.
//   node --test tests/browser/demo.test.mjs      (after scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM_BACKEND, INT_SCORE_TOL, MODELS, ROOT, golden, u16, entitiesU16, requireModels } from './golden.mjs';
import { launch } from './browser.mjs';
import { serve } from '../../scripts/serve.mjs';

requireModels();
const ARTIFACTS = join(ROOT, 'target/browser-artifacts');
mkdirSync(ARTIFACTS, { recursive: true });
const WWW = join(ROOT, 'www');
const T = { timeout: 180_000 };
// How the page shows the CPU backend (`CPU · relaxed-simd`).
const PAGE_CPU = `CPU · ${CHROMIUM_BACKEND.replace(/^cpu-/, '')}`;
// webert's q8 against onnxruntime on the same file: the same integer arithmetic and f32 elsewhere,
// but an activation a hair from a rounding step may take the next code (here 2 of the 6 sentences'
// cosines move by 8e-4 and 1.7e-3, the rest by under 3e-6); zero-shot multiplies cosines by 20.
const Q8_COS_TOL = 5e-3;
const Q8_SCORE_TOL = 2e-2;

let server;
let browser;
let page;

before(async () => {
  server = await serve({ mounts: { '/': WWW, '/models/': MODELS, '/tiny/': join(ROOT, 'tests/tiny') } });
  browser = await launch();
  page = browser.page;
  await page.goto(server.url);
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Clicks a tab's run button and waits until that run has finished. */
async function run(p, tab) {
  const before = await p.$eval(`#panel-${tab}`, (e) => Number(e.dataset.runs ?? 0));
  await p.click(`#${tab}-run`);
  await p.waitForFunction(([t, n]) => Number(document.querySelector(`#panel-${t}`).dataset.runs ?? 0) > n, [tab, before], { timeout: 120_000 });
  const error = await p.$eval(`#${tab}-error`, (e) => (e.hidden ? null : e.textContent));
  assert.equal(error, null, `the page showed an error running ${tab}`);
}

const marks = (p) => p.$$eval('#ner-out mark', (ms) => ms.map((m) => ({
  label: m.dataset.label, start: Number(m.dataset.start), end: Number(m.dataset.end), score: Number(m.dataset.score), text: m.textContent,
})));

test('PII tab: highlighted entities and spans equal the golden pipeline output', T, async () => {
  await page.waitForFunction(() => document.querySelector('#backend').textContent.startsWith('CPU'), null, { timeout: 120_000 });
  await page.uncheck('#ner-patterns'); // the goldens are the model's own output
  for (const strategy of ['first', 'simple', 'none']) {
    await page.selectOption('#ner-agg', strategy);
    for (const c of golden('pii.json').cases) {
      await page.fill('#ner-text', c.text);
      await run(page, 'ner');
      const got = await marks(page);
      const want = entitiesU16(c.text, c.pipeline[strategy]);
      const what = `${c.name}/${strategy}`;
      assert.deepEqual(got.map((m) => [m.label, m.start, m.end]), want.map((e) => [e.entity_group ?? e.entity, e.start, e.end]), what);
      got.forEach((m, i) => {
        assert.equal(m.text, c.text.slice(m.start, m.end), what);
        assert.ok(Math.abs(m.score - want[i].score) < INT_SCORE_TOL, `${what}: score`);
      });
      // The page shows the whole text, entities in place.
      assert.equal(await page.$eval('#ner-out', (e) => e.textContent), c.text, what);
    }
  }
  const c = golden('pii.json').cases.find((x) => x.name === 'unicode');
  await page.selectOption('#ner-agg', 'first');
  await page.fill('#ner-text', c.text);
  await run(page, 'ner');
  assert.match(await page.textContent('#ner-ms'), new RegExp(`ms \\(engine [\\d.]+ ms, ${PAGE_CPU}\\)`));
  await page.screenshot({ path: join(ARTIFACTS, 'tab-ner.png'), fullPage: true });
  await page.check('#ner-redact');
  const redacted = await page.$eval('#ner-out', (e) => e.textContent);
  for (const e of c.pipeline.first) assert.ok(redacted.includes(`[${e.entity_group}]`));
  assert.ok(!redacted.includes('Müller'));
  await page.screenshot({ path: join(ARTIFACTS, 'tab-ner-redacted.png'), fullPage: true });
  await page.uncheck('#ner-redact');
  await page.check('#ner-patterns');
});

test('PII tab: with patterns (the default), redaction leaves no e-mail, phone, IBAN, card or IP address', T, async () => {
  await page.click('#tab-ner');
  assert.equal(await page.isChecked('#ner-patterns'), true);
  const secrets = {
    EMAIL: ['jane.doe@example.com', 'zoë.müller@beispiel.de'],
    PHONE: ['+41 44 123 45 67', '(415) 555-2671'],
    IBAN: ['DE89 3704 0044 0532 0130 00'],
    CREDIT_CARD: ['4111 1111 1111 1111'],
    IP_ADDRESS: ['192.168.10.20', '2001:db8::8a2e:370:7334'],
  };
  const text = 'Hi 👋🏽 Jane Doe here (jane.doe@example.com, +41 44 123 45 67 or (415) 555-2671); ' +
    'cc zoë.müller@beispiel.de 🇨🇭. Pay to DE89 3704 0044 0532 0130 00 — card 4111 1111 1111 1111. ' +
    'Logged from 192.168.10.20 and 2001:db8::8a2e:370:7334 ❤️.';
  await page.fill('#ner-text', text);
  await page.selectOption('#ner-agg', 'first');
  await run(page, 'ner');
  const found = await page.$$eval('#ner-out mark', (ms) => ms.map((m) => [m.dataset.label, m.dataset.source, m.textContent]));
  for (const [label, list] of Object.entries(secrets)) {
    for (const s of list) assert.ok(found.some(([l, src, t]) => l === label && src === 'pattern' && t === s), `${label} ${s}: ${JSON.stringify(found)}`);
  }
  for (const style of ['type', 'mask', 'pseudonym']) {
    await page.selectOption('#ner-style', style);
    await page.check('#ner-redact');
    const redacted = await page.$eval('#ner-out', (e) => e.textContent);
    for (const s of Object.values(secrets).flat()) {
      assert.ok(!redacted.includes(s), `${style}: ${s} in ${redacted}`);
      for (const part of s.split(/[\s@.:()-]+/).filter((x) => x.length >= 4)) assert.ok(!redacted.includes(part), `${style}: ${part} in ${redacted}`);
    }
    assert.ok(redacted.startsWith('Hi 👋🏽 ') && redacted.endsWith(' ❤️.'), redacted);
    if (style === 'type') for (const label of Object.keys(secrets)) assert.ok(redacted.includes(`[${label}]`), `${label}: ${redacted}`);
    if (style === 'pseudonym') assert.ok(redacted.includes('[EMAIL_2]') && !redacted.includes('[EMAIL_3]'), redacted);
    await page.screenshot({ path: join(ARTIFACTS, `tab-ner-redacted-patterns-${style}.png`), fullPage: true });
    await page.uncheck('#ner-redact');
  }
  await page.selectOption('#ner-style', 'type');
});

/** Picks the MiniLM weights (the header's q8 / f32 choice) and waits until the tab has loaded them. */
async function minilmDtype(p, tab, dtype) {
  await p.selectOption('#dtype', dtype);
  const name = dtype === 'q8' ? 'q8' : 'f32';
  await p.waitForFunction(([t, n]) => document.querySelector(`#panel-${t} .model-name`).textContent.includes(`, ${n})`) || document.querySelector(`#panel-${t} .model-name`).textContent.includes(`(${n}),`), [tab, name], { timeout: 120_000 });
}

/** The q8 goldens are onnxruntime's on this very file (scripts/make_demo_q8_golden.py). */
function q8Golden() {
  const g = golden('minilm_q8.json');
  const size = statSync(join(MODELS, 'minilm/onnx/model_quantized.onnx')).size;
  assert.equal(size, g.file_size, 'models/minilm/onnx/model_quantized.onnx is not the file the q8 goldens were made on: rerun scripts/setup.sh');
  return g;
}

test('the demo\'s MiniLM is q8 by default; the header offers q8 and f32 with their download sizes', T, async () => {
  assert.equal(await page.$eval('#dtype', (s) => s.value), 'q8');
  await page.waitForFunction(() => [...document.querySelectorAll('#dtype option')].every((o) => o.dataset.size), null, { timeout: 30_000 });
  const options = await page.$$eval('#dtype option', (os) => os.map((o) => [o.value, o.textContent, Number(o.dataset.size)]));
  const q8 = statSync(join(MODELS, 'minilm/onnx/model_quantized.onnx')).size;
  const f32 = statSync(join(MODELS, 'minilm/model.safetensors')).size;
  assert.deepEqual(options, [['q8', `q8 (8-bit) · ${(q8 / 1048576).toFixed(1)} MB`, q8], ['fp32', `f32 · ${(f32 / 1048576).toFixed(1)} MB`, f32]]);
  assert.ok(q8 < f32 / 3, `q8 is ${q8} bytes, f32 ${f32}`);
});

test('Classification tab: zero-shot ranking and scores equal the golden (q8: onnxruntime on the same file)', T, async () => {
  await page.click('#tab-cls');
  const g = q8Golden().zero_shot;
  for (const c of g.cases) {
    await page.fill('#cls-text', c.sequence);
    await page.fill('#cls-labels', c.candidate_labels.join(', '));
    for (const [key, multi] of [['single_label', false], ['multi_label', true]]) {
      await page.setChecked('#cls-multi', multi);
      await run(page, 'cls');
      const got = await page.$$eval('#cls-out li', (li) => li.map((l) => [l.dataset.label, Number(l.dataset.score)]));
      const want = c[key];
      // Every label's score; the order wherever the golden's scores are further apart than that.
      want.labels.forEach((label, i) => {
        const s = got.find(([l]) => l === label)?.[1];
        assert.ok(Math.abs(s - want.scores[i]) < Q8_SCORE_TOL, `${key} ${label}: ${s} vs ${want.scores[i]}`);
        if (i > 0 && want.scores[i - 1] - want.scores[i] > 2 * Q8_SCORE_TOL) {
          assert.ok(got.findIndex(([l]) => l === want.labels[i - 1]) < got.findIndex(([l]) => l === label), `${key}: ${want.labels[i - 1]} before ${label}`);
        }
      });
    }
  }
  await page.setChecked('#cls-multi', false);
  assert.match(await page.textContent('#panel-cls .model-name'), /models\/minilm \(q8\)/);
  await page.screenshot({ path: join(ARTIFACTS, 'tab-classification.png'), fullPage: true });
});

/** A fine-tuned folder as a user would have it: MiniLM plus a committed seeded head. */
function headFolder(head, name) {
  // (Playwright skips symlinks when it reads a folder, so the files are copied.)
  const dir = mkdtempSync(join(tmpdir(), 'webert-head-'));
  const folder = join(dir, name);
  mkdirSync(folder);
  for (const f of ['model.safetensors', 'tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(MODELS, 'minilm', f), join(folder, f));
  for (const f of ['config.json', 'head.safetensors']) copyFileSync(join(ROOT, 'tests/heads', head, f), join(folder, f));
  return { folder, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

test('Classification tab: a classifier the user loads replaces zero-shot', T, async () => {
  await page.click('#tab-cls');
  await page.click('#panel-cls summary');
  const { folder, remove } = headFolder('seqcls', 'my-classifier');
  try {
    await page.setInputFiles('#panel-cls input[type=file]', folder);
    await page.waitForFunction(() => document.querySelector('#panel-cls .model-name').textContent === 'my-classifier', null, { timeout: 120_000 });
    assert.equal(await page.isVisible('#cls-labels'), false);
    const c = golden('seqcls.json').cases.find((x) => x.text_pair === null);
    await page.fill('#cls-text', c.text);
    await run(page, 'cls');
    const got = await page.$$eval('#cls-out li', (li) => li.map((l) => [l.dataset.label, Number(l.dataset.score)]));
    assert.deepEqual(got.map((x) => x[0]), c.pipeline.softmax.map((x) => x.label));
    got.forEach(([, s], i) => assert.ok(Math.abs(s - c.pipeline.softmax[i].score) < 1e-4));
    await page.screenshot({ path: join(ARTIFACTS, 'tab-classification-finetuned.png'), fullPage: true });
    await page.click('#cls-zero-shot');
    await page.waitForFunction(() => document.querySelector('#panel-cls .model-name').textContent.includes('zero-shot'), null, { timeout: 120_000 });
    assert.equal(await page.isVisible('#cls-labels'), true);
  } finally {
    remove();
  }
});

test('Similarity tab: ranking and cosines equal the goldens, q8 (onnxruntime on the file) and f32 (PyTorch)', T, async () => {
  await page.click('#tab-sim');
  for (const [dtype, g, tol] of [['q8', q8Golden().similarity, Q8_COS_TOL], ['fp32', golden('minilm.json').similarity, 1e-4]]) {
    await minilmDtype(page, 'sim', dtype);
    await page.fill('#sim-query', g.query);
    await page.fill('#sim-docs', g.candidates.join('\n'));
    await run(page, 'sim');
    const got = await page.$$eval('#sim-out li', (li) => li.map((l) => [Number(l.dataset.index), Number(l.dataset.score)]));
    assert.deepEqual(got.map((x) => x[0]), g.ranking, dtype);
    got.forEach(([i, s]) => assert.ok(Math.abs(s - g.cosine[i]) < tol, `${dtype} ${i}: ${s} vs ${g.cosine[i]}`));
    if (dtype === 'q8') await page.screenshot({ path: join(ARTIFACTS, 'tab-similarity.png'), fullPage: true });
  }
  assert.match(await page.textContent('#sim-code'), /pipeline\('feature-extraction', 'models\/minilm\/', \{ device: 'auto', dtype: 'fp32' \}\)/);
  await minilmDtype(page, 'sim', 'q8');
});

test('QA tab: says no checkpoint ships, then answers with a folder the user picks', T, async () => {
  await page.click('#tab-qa');
  assert.match(await page.textContent('#qa-notice'), /No question-answering checkpoint ships with this demo/);
  assert.equal(await page.isDisabled('#qa-run'), true);
  await page.screenshot({ path: join(ARTIFACTS, 'tab-qa-empty.png'), fullPage: true });
  const { folder, remove } = headFolder('qa', 'my-qa-model');
  try {
    await page.setInputFiles('#panel-qa input[type=file]', folder);
    await page.waitForFunction(() => !document.querySelector('#qa-run').disabled, null, { timeout: 120_000 });
    const c = golden('qa.json').cases.find((x) => x.name === 'unicode');
    await page.fill('#qa-question', c.question);
    await page.fill('#qa-context', c.context);
    await run(page, 'qa');
    const best = await page.$eval('#qa-out mark', (m) => ({ text: m.textContent, start: Number(m.dataset.start), end: Number(m.dataset.end) }));
    const want = c.answers[0];
    assert.equal(best.text, want.answer);
    assert.deepEqual([best.start, best.end], [u16(c.context, want.start), u16(c.context, want.end)]);
    assert.equal(await page.$eval('#panel-qa .model-name', (e) => e.textContent), 'my-qa-model');
    await page.screenshot({ path: join(ARTIFACTS, 'tab-qa.png'), fullPage: true });
  } finally {
    remove();
  }
});

/**
 * `all[i]`: NER ('first') of case i mod n, each equal to the golden; `trap`: the message of a
 * forced trap; `after`: case 0 again on the restarted instance.
 */
function checkCallsAndTrap({ all, trap, after }, cases) {
  all.forEach((got, i) => {
    const c = cases[i % cases.length];
    const want = entitiesU16(c.text, c.pipeline.first);
    assert.deepEqual(got.map((e) => [e.entity_group, e.word, e.start, e.end]), want.map((e) => [e.entity_group, e.word, e.start, e.end]), `call ${i}`);
    got.forEach((e, j) => assert.ok(Math.abs(e.score - want[j].score) < INT_SCORE_TOL, `call ${i}`));
  });
  assert.match(trap, /instance was restarted/);
  assert.deepEqual(after.map((e) => [e.start, e.end]), entitiesU16(cases[0].text, cases[0].pipeline.first).map((e) => [e.start, e.end]));
}

test('100 overlapping calls from the page all answer correctly; a trap is survived', T, async () => {
  const cases = golden('pii.json').cases;
  const results = await page.evaluate(async (texts) => {
    const { pipeline } = await import('/pkg/webert.js');
    const { testHooks } = await import('/pkg/testing.js');
    const ner = await pipeline('ner', '/models/pii/');
    const calls = Array.from({ length: 100 }, (_, i) => ner(texts[i % texts.length], { aggregation_strategy: 'first' }));
    const all = await Promise.all(calls);
    let trap = null;
    await testHooks(ner).trap().catch((e) => (trap = e.message));
    const after = await ner(texts[0], { aggregation_strategy: 'first' });
    return { all, trap, after };
  }, cases.map((c) => c.text));
  assert.equal(results.all.length, 100);
  checkCallsAndTrap(results, cases);
});

test('the express lane (shared memory): answers as by message, queued calls, a trap inside it, large results, dispose', T, async () => {
  const cases = golden('pii.json').cases;
  const r = await page.evaluate(async (texts) => {
    const { pipeline } = await import('/pkg/webert.js');
    const { testHooks } = await import('/pkg/testing.js');
    const laneStats = (p) => testHooks(p).laneStats();
    // The worker waits on the lane once it has handled its last message (and warmed up: a first
    // call ends that).
    const settle = () => new Promise((ok) => setTimeout(ok, 200));
    const onLane = async (p, call) => {
      for (let i = 0; i < 50; i++, await settle()) {
        const before = laneStats(p).answered;
        await call();
        if (laneStats(p).answered > before) return laneStats(p);
      }
      throw new Error('no call took the lane');
    };
    const opts = { aggregation_strategy: 'first' };
    const ner = await pipeline('ner', '/models/pii/', { cache: false }); // its own worker
    const since = (base) => ({ answered: laneStats(ner).answered - base.answered, refused: laneStats(ner).refused - base.refused });
    const base = await onLane(ner, () => ner(texts[0], opts));
    const all = [];
    for (let i = 0; i < 8; i++) all.push(await ner(texts[i % texts.length], opts));
    const sequential = since(base);
    // the first on the lane, the rest queued behind it by message
    all.push(...(await Promise.all(texts.map((t) => ner(t, opts)))));
    const mixed = since(base);
    await settle();
    let trap = null;
    await testHooks(ner).trap().catch((e) => (trap = e.message));
    const trapped = since(base);
    const after = await ner(texts[0], opts); // refused by the lane (no model), reloaded by message
    const reloaded = since(base);
    ner.dispose();
    // token states of 4 long texts: a result beyond the lane's 1 MB comes by message
    const fx = await pipeline('feature-extraction', '/models/minilm/', { cache: false });
    const local = await pipeline('feature-extraction', '/models/minilm/', { cache: false, worker: false });
    const long = Array(4).fill(texts.join(' '));
    const fxBase = await onLane(fx, () => fx(texts[0]));
    const none = { pooling: 'none' };
    const big = await fx(long, none);
    const same = JSON.stringify(big) === JSON.stringify(await local(long, none));
    const bigLane = { answered: laneStats(fx).answered - fxBase.answered, refused: laneStats(fx).refused - fxBase.refused };
    await settle();
    const running = fx(long, none).then(() => 'answered', (e) => e.message);
    fx.dispose();
    local.dispose();
    return { isolated: self.crossOriginIsolated, all, sequential, mixed, trap, trapped, after, reloaded, same, bigLen: JSON.stringify(big).length, bigLane, disposed: await running };
  }, cases.map((c) => c.text));
  assert.ok(r.isolated);
  assert.deepEqual(r.sequential, { answered: 8, refused: 0 });
  assert.deepEqual(r.mixed, { answered: 9, refused: 0 }, 'one of the overlapping calls takes the lane');
  checkCallsAndTrap(r, cases);
  assert.deepEqual(r.trapped, { answered: 10, refused: 0 }, 'the trap hook ran on the lane');
  assert.deepEqual(r.reloaded, { answered: 10, refused: 1 });
  assert.ok(r.bigLen > 1 << 20, `the result (${r.bigLen} bytes of JSON) should exceed the lane`);
  assert.ok(r.same, 'token states through the worker equal those computed in the page');
  assert.deepEqual(r.bigLane, { answered: 1, refused: 0 });
  assert.equal(r.disposed, 'the pipeline was disposed');
});

test('the threads build: 2 threads answer the goldens, bit for bit as 1 thread, and survive a trap', T, async () => {
  const cases = golden('pii.json').cases;
  const fresh = await browser.context.newPage(); // a page whose own thread has no module started yet
  await fresh.goto(`${server.url}/pkg/README.md`);
  const r = await fresh.evaluate(async (texts) => {
    const { pipeline } = await import('/pkg/webert.js');
    const { testHooks } = await import('/pkg/testing.js');
    const ner = await pipeline('ner', '/models/pii/', { threads: 2 });
    const calls = Array.from({ length: 20 }, (_, i) => ner(texts[i % texts.length], { aggregation_strategy: 'first' }));
    const all = await Promise.all(calls);
    let trap = null;
    await testHooks(ner).trap().catch((e) => (trap = e.message));
    const after = await ner(texts[0], { aggregation_strategy: 'first' });
    const text = texts.join(' ');
    const one = await pipeline('feature-extraction', '/models/minilm/', { threads: 1 });
    const two = await pipeline('feature-extraction', '/models/minilm/', { threads: 2, worker: false });
    const e1 = await one(text, { pooling: 'mean' });
    const e2 = await two(text, { pooling: 'mean' });
    const info = { ner: ner.info.threads, one: one.info.threads, two: two.info.threads };
    await Promise.all([ner.dispose(), one.dispose(), two.dispose()]);
    return { isolated: self.crossOriginIsolated, all, trap, after, same: JSON.stringify(e1) === JSON.stringify(e2), info };
  }, cases.map((c) => c.text));
  await fresh.close();
  assert.ok(r.isolated, 'the demo server sends the cross-origin isolation headers');
  assert.deepEqual(r.info, { ner: 2, one: 1, two: 2 });
  checkCallsAndTrap(r, cases);
  assert.ok(r.same, 'embeddings on 2 threads (threads build, page thread) equal those on 1 (Worker)');
});

test('through the worker: progress, Cache API, abort and clear errors', T, async () => {
  await page.waitForFunction(() => document.querySelector('#backend').textContent.startsWith('CPU'), null, { timeout: 120_000 });
  const r = await page.evaluate(async (sum) => {
    const { pipeline, clearCache, env } = await import('/pkg/webert.js');
    // Each load in a fresh worker (no spare worker waits after dispose()), whose events these are.
    env.spareWorkerMs = 0;
    // With a checksum these pipelines differ from the page's own (equal ones share a worker).
    const sha256 = { 'onnx/model_q4.onnx': sum };
    const stages = async (opts) => {
      const ev = [];
      const p = await pipeline('ner', '/models/pii/', { ...opts, sha256, onProgress: (e) => ev.push(e) });
      p.dispose();
      return ev;
    };
    await clearCache('/models/pii/');
    const fresh = await stages({});
    const cached = await stages({});
    const message = (promise) => promise.then(() => null, (e) => ({ name: e.name, message: e.message, isError: e instanceof Error }));
    const ac = new AbortController();
    const aborted = message(pipeline('ner', '/models/pii/', { signal: ac.signal, cache: false }));
    setTimeout(() => ac.abort(), 5);
    return {
      fresh: fresh.map((e) => [e.stage, !!e.cached]),
      cached: cached.map((e) => [e.stage, !!e.cached]),
      freshLast: fresh.filter((e) => e.stage === 'download').at(-1),
      notFound: await message(pipeline('ner', '/models/nothing/')),
      network: await message(pipeline('ner', 'http://127.0.0.1:9/m/')),
      head: await message(pipeline('question-answering', '/models/minilm/')),
      aborted: await aborted,
    };
  }, golden('pii.json').model.onnx_sha256);
  const runs = (xs) => xs.map((x) => x.join(':')).filter((x, i, a) => x !== a[i - 1]);
  // A fresh worker first starts the WebAssembly module (compile), then reads the files.
  assert.deepEqual(runs(r.fresh), ['compile:false', 'download:false', 'compile:false', 'ready:false']);
  assert.deepEqual(runs(r.cached), ['compile:false', 'download:true', 'compile:false', 'ready:false']);
  assert.equal(r.freshLast.bytes, r.freshLast.total);
  assert.match(r.notFound.message, /\/models\/nothing\/config\.json: HTTP 404/);
  assert.match(r.network.message, /network error fetching http:\/\/127\.0\.0\.1:9\/m\/config\.json/);
  assert.match(r.head.message, /cannot do question-answering: it is a bert model with a feature-extraction head/);
  for (const e of [r.notFound, r.network, r.head]) assert.equal(e.isError, true);
  assert.equal(r.aborted.name, 'AbortError');
});

test('the page stays responsive while the worker computes', T, async () => {
  const r = await page.evaluate(async () => {
    const { pipeline } = await import('/pkg/webert.js');
    const ner = await pipeline('ner', '/models/pii/');
    const text = 'John Smith lives at 42 Elm Street, Springfield. '.repeat(40);
    let worst = 0;
    let busy = true;
    const tick = async () => {
      while (busy) {
        const t0 = performance.now();
        await new Promise((ok) => setTimeout(ok, 0));
        worst = Math.max(worst, performance.now() - t0);
      }
    };
    const ticking = tick();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 6 }, () => ner(text, { aggregation_strategy: 'first' })));
    const total = performance.now() - t0;
    busy = false;
    await ticking;
    return { worst, total };
  });
  console.log(`# 6 long NER calls took ${r.total.toFixed(0)} ms; the page's longest pause was ${r.worst.toFixed(1)} ms`);
  assert.ok(r.total > 200, 'the calls should take a while');
  assert.ok(r.worst < 100, `the main thread paused ${r.worst} ms`);
});

test('a bad model URL in the page shows a clear error', T, async () => {
  await page.click('#tab-qa');
  await page.fill('#panel-qa .loader input[type=text]', 'models/nothing-here/');
  await page.click('#panel-qa .loader button');
  await page.waitForSelector('#qa-error:not([hidden])');
  assert.match(await page.textContent('#qa-error'), /Could not load models\/nothing-here\/: http:\/\/127\.0\.0\.1:\d+\/models\/nothing-here\/config\.json: HTTP 404/);
  await page.screenshot({ path: join(ARTIFACTS, 'error-bad-url.png'), fullPage: true });
  await page.click('#tab-ner');
});

test('CPU timings in Chromium (MiniLM and PII, 128 tokens)', T, async () => {
  const t = await page.evaluate(async () => {
    const { pipeline } = await import('/pkg/webert.js');
    const text = Array.from({ length: 126 }, (_, i) => ['the', 'cat', 'sat', 'on', 'a', 'mat'][i % 6]).join(' ');
    const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
    const out = {};
    for (const [name, task, url] of [['minilm', 'feature-extraction', '/models/minilm/'], ['pii', 'ner', '/models/pii/']]) {
      const t0 = performance.now();
      const p = await pipeline(task, url, { cache: true });
      const load = performance.now() - t0;
      const ms = [];
      for (let i = 0; i < 13; i++) ms.push((await p(text)).ms);
      out[name] = { load_ms: Math.round(load), median_ms: +median(ms.slice(3)).toFixed(1) };
    }
    return out;
  });
  console.log(`# Chromium CPU (${CHROMIUM_BACKEND}, 1 thread), batch 1 x 128 tokens: ${JSON.stringify(t)}`);
  assert.ok(t.minilm.median_ms > 0 && t.minilm.median_ms < 5000);
});

test('keyboard: arrow keys move between tabs; phone width screenshots', T, async () => {
  await page.focus('#tab-qa');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.getAttribute('#tab-sim', 'aria-selected'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-sim');
  await page.keyboard.press('Home');
  assert.equal(await page.getAttribute('#tab-ner', 'aria-selected'), 'true');
  assert.equal(await page.isVisible('#panel-ner'), true);
  assert.equal(await page.isVisible('#panel-sim'), false);
  await page.setViewportSize({ width: 390, height: 844 });
  for (const tab of ['ner', 'cls', 'qa', 'sim']) {
    await page.click(`#tab-${tab}`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${tab}: the page is ${overflow}px wider than a phone`);
    // No word broken across lines ("mode/l") in the tables, apart from the entity's own text.
    const broken = await page.evaluate((t) => [...document.querySelectorAll(`#panel-${t} :is(th, td):not(.text)`)]
      .filter((c) => c.getClientRects().length && c.textContent.trim() && !/\s/.test(c.textContent.trim()))
      .filter((c) => {
        const r = document.createRange();
        r.selectNodeContents(c);
        return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size > 1;
      }).map((c) => c.textContent), tab);
    assert.deepEqual(broken, [], `${tab}: words broken across lines at 390 px`);
    await page.screenshot({ path: join(ARTIFACTS, `phone-${tab}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1100, height: 900 });
  assert.deepEqual(browser.logs.filter((l) => l.startsWith('[pageerror]')), []);
});

test('the service worker keeps every module and .wasm of the package for offline use', () => {
  const sw = readFileSync(join(WWW, 'sw.js'), 'utf8');
  const files = JSON.parse(readFileSync(join(WWW, 'pkg-src', 'package.json'), 'utf8')).files;
  // testing.js is the test hooks' entry point, which the page never imports.
  const needed = files.filter((f) => /\.(js|wasm)$/.test(f) && f !== 'testing.js');
  const missing = needed.filter((f) => !sw.includes(`'pkg/${f}'`));
  assert.deepEqual(missing, [], 'www/sw.js SHELL lacks these');
});

test('the service worker keeps every module of the page for offline use', () => {
  const sw = readFileSync(join(WWW, 'sw.js'), 'utf8');
  const modules = ['app.js', ...readdirSync(join(WWW, 'demo')).filter((f) => f.endsWith('.js')).map((f) => `demo/${f}`)];
  const missing = modules.filter((f) => !sw.includes(`'${f}'`));
  assert.deepEqual(missing, [], 'www/sw.js SHELL lacks these');
});

test('works offline after the first visit (service worker + Cache API)', T, async () => {
  const own = await serve({ mounts: { '/': WWW, '/models/': MODELS } });
  const b = await launch();
  try {
    await b.page.goto(own.url);
    await b.page.waitForFunction(() => document.querySelector('#backend').textContent.startsWith('CPU'), null, { timeout: 120_000 });
    await b.page.evaluate(() => navigator.serviceWorker.ready);
    await own.close(); // nothing answers on that port any more
    await b.page.reload();
    await b.page.waitForFunction(() => document.querySelector('#backend').textContent.startsWith('CPU'), null, { timeout: 120_000 });
    const c = golden('pii.json').cases[0];
    await b.page.fill('#ner-text', c.text);
    await b.page.uncheck('#ner-patterns'); // the goldens are the model's own output
    await run(b.page, 'ner');
    const got = await marks(b.page);
    assert.deepEqual(got.map((m) => [m.label, m.start, m.end]), entitiesU16(c.text, c.pipeline.first).map((e) => [e.entity_group, e.start, e.end]));
    await b.page.screenshot({ path: join(ARTIFACTS, 'offline-ner.png'), fullPage: true });
  } finally {
    await b.close();
    await own.close();
  }
});

test('without WebGPU the page says so and runs on the CPU', T, async () => {
  const b = await launch({ webgpu: false });
  try {
    await b.page.goto(server.url);
    await b.page.waitForFunction(() => document.querySelector('#webgpu').dataset.available !== undefined);
    assert.equal(await b.page.$eval('#webgpu', (e) => e.dataset.available), 'false');
    assert.match(await b.page.textContent('#webgpu'), /not available/);
    // The WebGPU choice could only fail here: it is off, and says why.
    assert.deepEqual(await b.page.$eval('#device option[value=webgpu]', (o) => [o.disabled, o.textContent]), [true, 'WebGPU (not available here)']);
    const c = golden('pii.json').cases[0];
    await b.page.fill('#ner-text', c.text);
    await b.page.uncheck('#ner-patterns'); // the goldens are the model's own output
    await run(b.page, 'ner');
    assert.equal((await marks(b.page)).length, c.pipeline.first.length);
    assert.equal(await b.page.textContent('#backend'), PAGE_CPU);
    const err = await b.page.evaluate(async () => {
      const { pipeline } = await import('/pkg/webert.js');
      return pipeline('ner', '/models/pii/', { device: 'webgpu' }).then(() => null, (e) => e.message);
    });
    assert.match(err, /WebGPU is not available here/);
    await b.page.screenshot({ path: join(ARTIFACTS, 'no-webgpu.png'), fullPage: true });
  } finally {
    await b.close();
  }
});

test('auto never picks the software fallback adapter: the page runs on the CPU', T, async () => {
  await page.waitForFunction(() => document.querySelector('#webgpu').dataset.available !== undefined);
  const text = await page.textContent('#webgpu');
  console.log(`# --enable-unsafe-webgpu: ${text}`);
  // Chromium without a GPU offers SwiftShader, a fallback adapter (CPU-emulated).
  assert.equal(await page.$eval('#webgpu', (e) => e.dataset.available), 'true');
  assert.equal(await page.$eval('#webgpu', (e) => e.dataset.fallback), 'true');
  assert.match(text, /fallback adapter; Auto uses the CPU/);
  assert.equal(await page.$eval('#device', (e) => e.value), 'auto');
  assert.equal(await page.textContent('#backend'), PAGE_CPU);
});

test('WebGPU mode (SwiftShader): the PII tab highlights the golden entities, as in CPU mode', T, async () => {
  const b = await launch();
  try {
    await b.page.goto(`${server.url}?device=webgpu`);
    await b.page.waitForFunction(() => document.querySelector('#backend').textContent.startsWith('WebGPU'), null, { timeout: 120_000 });
    assert.match(await b.page.textContent('#backend'), /WebGPU · .*swiftshader/i);
    // SwiftShader runs compute shaders on the CPU (seconds per call): two cases, one strategy.
    await b.page.uncheck('#ner-patterns'); // the goldens are the model's own output
    for (const c of golden('pii.json').cases.filter((x) => ['names_email', 'unicode'].includes(x.name))) {
      await b.page.fill('#ner-text', c.text);
      await run(b.page, 'ner');
      const got = await marks(b.page);
      const want = entitiesU16(c.text, c.pipeline.first);
      assert.deepEqual(got.map((m) => [m.label, m.start, m.end, m.text]), want.map((e) => [e.entity_group, e.start, e.end, c.text.slice(e.start, e.end)]), c.name);
      got.forEach((m, i) => assert.ok(Math.abs(m.score - want[i].score) < 1e-3, `${c.name}: score`));
      assert.match(await b.page.textContent('#ner-ms'), /ms \(engine [\d.]+ ms, WebGPU · /);
    }
    await b.page.screenshot({ path: join(ARTIFACTS, 'tab-ner-webgpu.png'), fullPage: true });
    assert.deepEqual(b.logs.filter((l) => l.startsWith('[pageerror]')), []);
  } finally {
    await b.close();
  }
});

test('WebGPU (SwiftShader): a long text reports its windows one by one, as on the CPU, and stops between two', T, async () => {
  const b = await launch();
  try {
    await b.page.goto(`${server.url}?device=cpu`);
    const w = await b.page.evaluate(async () => {
      const { pipeline } = await import('/pkg/webert.js');
      // A tiny token classifier (64-token windows): many windows, each cheap on SwiftShader.
      const ner = await pipeline('ner', '/tiny/bert-gelu-tanh-f16/', { device: 'webgpu' });
      const text = 'John Smith lives at 42 Elm Street, Springfield. '.repeat(20);
      const plain = await ner(text, { aggregation_strategy: 'first' });
      const seen = [];
      const watched = await ner(text, { aggregation_strategy: 'first', onProgress: (p) => seen.push([p.done, p.total]) });
      const ac = new AbortController();
      const stopped = [];
      const error = await ner(text, {
        signal: ac.signal,
        onProgress: (p) => {
          stopped.push(p.done);
          if (p.done === 1) ac.abort();
        },
      }).then(() => null, (e) => e.name);
      const same = JSON.stringify(watched.map((e) => [e.entity_group, e.start, e.end])) === JSON.stringify(plain.map((e) => [e.entity_group, e.start, e.end]));
      return { backend: watched.backend, seen, same, error, stopped, after: (await ner('John Smith')).backend };
    });
    assert.match(w.backend, /^gpu/);
    const total = w.seen[0][1];
    assert.ok(total >= 3, `several windows: ${JSON.stringify(w.seen)}`);
    assert.deepEqual(w.seen, Array.from({ length: total + 1 }, (_, i) => [i, total]), 'one report per window and one at the end');
    assert.ok(w.same, 'the watched call finds what the batched one does');
    assert.equal(w.error, 'AbortError');
    assert.deepEqual(w.stopped.slice(0, 2), [0, 1]);
    assert.ok(Math.max(...w.stopped) < total, `stopped between two windows: ${w.stopped} of ${total}`);
    assert.match(w.after, /^gpu/, 'the model still answers after a cancelled call');
    assert.deepEqual(b.logs.filter((l) => l.startsWith('[pageerror]')), []);
  } finally {
    await b.close();
  }
});

test('WebGPU (SwiftShader): gpuTilings timed gives the CPU\'s answers and says so, saves the tilings for the next model on the same adapter; a bad value is a clear error', T, async () => {
  const b = await launch();
  try {
    await b.page.goto(`${server.url}?device=cpu`);
    const r = await b.page.evaluate(async () => {
      const { pipeline, env } = await import('/pkg/webert.js');
      env.spareWorkerMs = 0; // each model in its own worker and instance, as a later page's
      const text = 'John Smith lives at 42 Elm Street, Springfield.';
      const run = async (options) => {
        try {
          const t0 = performance.now();
          const ner = await pipeline('ner', '/tiny/bert-gelu-tanh-f16/', options);
          const t1 = performance.now();
          const es = await ner(text, { aggregation_strategy: 'none' });
          const t2 = performance.now();
          const again = await ner(text.toUpperCase(), { aggregation_strategy: 'none' });
          const ms = [t1 - t0, t2 - t1, performance.now() - t2].map(Math.round);
          const saved = ner.info.savedGpuTilings;
          const adapter = ner.info.adapter?.replace(' (fallback adapter)', '');
          ner.dispose();
          const { keys, text: storedText } = await stored();
          return { backend: es.backend, entities: es.map((e) => [e.entity, e.start, e.end, e.score]), again: again.backend, ms, saved, adapter, keys, stored: storedText };
        } catch (e) {
          return { error: e.message };
        }
      };
      // Every entry's name, and the text of the first.
      const stored = async () => {
        const cache = await caches.open('webert-gpu-v1');
        const keys = await cache.keys();
        const text = keys.length ? await (await cache.match(keys[0])).text() : null;
        return { keys: keys.map((k) => decodeURIComponent(k.url)), text };
      };
      await caches.delete('webert-gpu-v1');
      const bad = await pipeline('ner', '/tiny/bert-gelu-tanh-f16/', { device: 'webgpu', gpuTilings: 'fast' }).then(() => null, (e) => e.message);
      const cpu = await run({ device: 'cpu' });
      const timed = await run({ device: 'webgpu', gpuTilings: 'timed' });
      // A second model (its own worker and instance, as a later page's) restores the tilings.
      const restored = await run({ device: 'webgpu', gpuTilings: 'timed' });
      const uncached = await run({ device: 'webgpu', gpuTilings: 'timed', cache: false });
      // Another GPU's tilings (the same text under another adapter's entry) are not read.
      const cache = await caches.open('webert-gpu-v1');
      const [own] = await cache.keys();
      const saved = await (await cache.match(own)).text();
      await cache.delete(own);
      await cache.put(`https://webert.invalid/gpu-tilings/${encodeURIComponent('nvidia hopper')}.json`, new Response(saved));
      const foreign = await run({ device: 'webgpu', gpuTilings: 'timed' });
      return { cpu, timed, restored, uncached, foreign, bad };
    });
    assert.match(r.bad, /gpuTilings must be 'timed' or 'rule', not `fast`/);
    assert.equal(r.cpu.error, undefined, r.cpu.error);
    // Load, first call, second call (ms): the first call of a shape includes its timing.
    console.log(`# gpuTilings timed on SwiftShader: ${r.timed.error ?? `${r.timed.ms} ms (restored: ${r.restored.ms}), ${r.timed.backend}`}`);
    if (r.timed.error) {
      // An adapter without timestamp queries cannot time: the load says so.
      assert.match(r.timed.error, /no timestamp queries to time GEMM tilings/);
    } else {
      assert.match(r.timed.backend, /^gpu .*timed GEMM tiles/);
      // Named as `pipe.adapter` names it, not the engine's 'unnamed adapter'.
      assert.match(r.timed.backend, /^gpu google swiftshader/i);
      assert.match(r.timed.again, /^gpu /);
      assert.deepEqual(r.timed.entities.map((e) => e.slice(0, 3)), r.cpu.entities.map((e) => e.slice(0, 3)));
      r.timed.entities.forEach((e, i) => assert.ok(Math.abs(e[3] - r.cpu.entities[i][3]) < 1e-3, `score ${i}`));
      // The first model timed its tilings and stored them under its adapter's entry: one row
      // per GEMM shape run.
      assert.equal(r.timed.saved, 0);
      assert.ok(r.timed.adapter, 'the adapter is named');
      assert.deepEqual(r.timed.keys, [`https://webert.invalid/gpu-tilings/${r.timed.adapter}.json`]);
      const rows = JSON.parse(r.timed.stored).rows;
      assert.ok(rows.length >= 4 && rows.every((row) => row.ms > 0), r.timed.stored);
      // The second read them, timed nothing (the stored text is as the first left it: a new
      // timing would have stored new figures), and answers the same.
      assert.equal(r.restored.saved, rows.length);
      assert.equal(r.restored.stored, r.timed.stored);
      assert.deepEqual(r.restored.entities, r.timed.entities);
      // `cache: false` neither reads nor writes them.
      assert.equal(r.uncached.saved, 0);
      assert.equal(r.uncached.stored, r.timed.stored);
      // Tilings stored for another adapter are not restored: this one times its own again.
      assert.equal(r.foreign.saved, 0);
      // Timed anew, it may pick other tilings: the same entities, scores within rounding.
      assert.deepEqual(r.foreign.entities.map((e) => e.slice(0, 3)), r.timed.entities.map((e) => e.slice(0, 3)));
      r.foreign.entities.forEach((e, i) => assert.ok(Math.abs(e[3] - r.timed.entities[i][3]) < 1e-3, `score ${i}`));
      assert.deepEqual([...r.foreign.keys].sort(), [r.timed.keys[0], 'https://webert.invalid/gpu-tilings/nvidia hopper.json'].sort());
    }
    assert.deepEqual(b.logs.filter((l) => l.startsWith('[pageerror]')), []);
  } finally {
    await b.close();
  }
});

test('saved GEMM tilings: two workers storing at once both keep their rows (one writer at a time)', T, async () => {
  const r = await page.evaluate(async () => {
    const { saveTilings, tilingsKey } = await import('/pkg/tilings.js');
    await caches.delete('webert-gpu-v1');
    // Stand-ins for two instances' glue, each with tilings of its own shapes: export writes the
    // rows it holds, import adds the stored ones (as the engine does).
    const glue = (mine) => {
      const rows = new Map(mine.map((m) => [m, { shape: [m, 8, 8] }]));
      return {
        gpuTilingsTimed: () => mine.length,
        importGpuTilings: (text) => JSON.parse(text).rows.forEach((row) => rows.has(row.shape[0]) || rows.set(row.shape[0], row)),
        exportGpuTilings: () => JSON.stringify({ rows: [...rows.values()] }),
      };
    };
    const adapter = 'test adapter';
    await Promise.all([saveTilings(glue([16, 32]), 'a', adapter, {}), saveTilings(glue([64]), 'b', adapter, {})]);
    const res = await (await caches.open('webert-gpu-v1')).match(tilingsKey(adapter));
    return JSON.parse(await res.text()).rows.map((row) => row.shape[0]).sort((x, y) => x - y);
  });
  assert.deepEqual(r, [16, 32, 64]);
});

test('auto on a GPU: a forced device loss falls back to the CPU and still answers; an async trap is survived', T, async () => {
  const c = golden('pii.json').cases.find((x) => x.name === 'names_email');
  const r = await page.evaluate(async (text) => {
    const { pipeline } = await import('/pkg/webert.js');
    const { testHooks } = await import('/pkg/testing.js');
    // allowFallbackAdapter: let auto take SwiftShader, the only adapter here; probe: false, keep
    // it although the CPU is faster.
    const ner = await pipeline('ner', '/models/pii/', { device: 'auto', allowFallbackAdapter: true, probe: false });
    const pick = (es) => ({ backend: es.backend, entities: es.map((e) => [e.entity_group, e.start, e.end, e.score]) });
    const gpu = pick(await ner(text, { aggregation_strategy: 'first' }));
    await testHooks(ner).loseDevice();
    const cpu = pick(await ner(text, { aggregation_strategy: 'first' }));
    const failure = ner.gpuFailure;
    let trap = null;
    await testHooks(ner).trapAsync().catch((e) => (trap = e.message));
    const after = pick(await ner(text, { aggregation_strategy: 'first' }));
    ner.dispose();
    return { gpu, cpu, failure, trap, after, adapter: ner.adapter };
  }, c.text);
  const want = entitiesU16(c.text, c.pipeline.first);
  for (const [what, got] of [['gpu', r.gpu], ['after loss', r.cpu], ['after trap', r.after]]) {
    assert.deepEqual(got.entities.map((e) => e.slice(0, 3)), want.map((e) => [e.entity_group, e.start, e.end]), what);
    const tol = what === 'gpu' ? 1e-3 : INT_SCORE_TOL;
    got.entities.forEach((e, i) => assert.ok(Math.abs(e[3] - want[i].score) < tol, what));
  }
  assert.match(r.gpu.backend, /^gpu /);
  assert.equal(r.cpu.backend, CHROMIUM_BACKEND);
  // Whichever the browser reports first: the lost device, or the failed readback.
  assert.match(r.failure, /device lost|destroyed|reading results back/i);
  assert.match(r.trap, /debugTrapAsync called.*instance was restarted/s);
  assert.match(r.after.backend, /^gpu /); // the reloaded model sets WebGPU up again
  assert.match(r.adapter, /swiftshader/i);
});

test('auto times WebGPU against the CPU at load and keeps the faster: SwiftShader loses', T, async () => {
  const r = await page.evaluate(async () => {
    const { pipeline } = await import('/pkg/webert.js');
    const embed = await pipeline('feature-extraction', '/models/minilm/', { dtype: 'fp32', device: 'auto', allowFallbackAdapter: true });
    const out = await embed('timed at load', { pooling: 'mean' });
    embed.dispose();
    return { probe: embed.info.probe, failure: embed.gpuFailure, backend: out.backend, adapter: embed.adapter, finite: out.data.every(Number.isFinite), dims: out.dims };
  });
  console.log(`# probe: ${r.failure}`);
  assert.equal(r.probe.tokens, 128);
  assert.ok(r.probe.gpu_ms > 0 && r.probe.cpu_ms > 0 && r.probe.gpu_ms >= r.probe.cpu_ms, JSON.stringify(r.probe));
  // SwiftShader computes what the CPU does: its hidden states agree (wrong answers: below 0.9).
  assert.ok(r.probe.agreement > 0.99, JSON.stringify(r.probe));
  assert.match(r.probe.adapter, /BrowserWebGpu/); // Chromium withholds SwiftShader's name from wgpu
  assert.match(r.failure, /^.+ took [\d.]+ ms for 128 tokens, the CPU path [\d.]+ ms; hidden states agree to [\d.]+: using the CPU$/);
  assert.equal(r.backend, CHROMIUM_BACKEND);
  assert.equal(r.adapter, null); // the slower GPU was dropped
  assert.ok(r.finite);
  assert.deepEqual(r.dims, [1, 384]);
});
