// The demo page after things go wrong, and in its first minute, in headless Chromium: the
// classification tab's views after a failed load (bad URL, folder without tokenizer.json),
// errors staying in the tab they belong to and cleared on success, the CORS hint of a refused
// cross-origin fetch, absolute (Hugging Face) URLs kept absolute, zero-shot by an NLI model,
// one progress row per model with its size, a long text's windows and its Cancel button, the sample text, "show code", and the layout at
// 1280 and 390 px. Screenshots go to target/browser-artifacts/.
//   node --test tests/browser/demo_state.test.mjs      (after scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODELS, ROOT, golden, requireModels } from './golden.mjs';
import { launch } from './browser.mjs';
import { serve } from '../../scripts/serve.mjs';

requireModels();
const ARTIFACTS = join(ROOT, 'target/browser-artifacts');
mkdirSync(ARTIFACTS, { recursive: true });
const T = { timeout: 180_000 };

let server;
let noCors; // another origin that answers every request, without CORS headers
let browser;
let page;

before(async () => {
  server = await serve({ mounts: { '/': join(ROOT, 'www'), '/models/': MODELS } });
  noCors = createServer((req, res) => res.end('{}'));
  await new Promise((ok) => noCors.listen(0, '127.0.0.1', ok));
  // Nothing here reaches the internet: these hosts fail to resolve at once.
  const rules = '--host-resolver-rules=MAP example.invalid ~NOTFOUND, MAP huggingface.co ~NOTFOUND';
  browser = await launch({ viewport: { width: 1280, height: 900 }, args: [rules] });
  page = browser.page;
  // Every row the header's progress list shows, with each text it had.
  await page.addInitScript(() => {
    window.__rows = {};
    addEventListener('DOMContentLoaded', () => {
      const seen = () => {
        const now = [...document.querySelectorAll('#loads li')];
        window.__maxRows = Math.max(window.__maxRows ?? 0, now.length);
        for (const li of now) (window.__rows[li.dataset.model] ??= new Set()).add(li.textContent);
      };
      new MutationObserver(seen).observe(document.querySelector('#loads'), { subtree: true, childList: true, characterData: true });
    });
  });
  await page.goto(server.url);
});

after(async () => {
  await browser?.close();
  await server?.close();
  noCors?.close();
});

/** Clicks a tab's run button and waits until that run has finished; the tab's error, if any. */
async function run(p, tab) {
  const n = await p.$eval(`#panel-${tab}`, (e) => Number(e.dataset.runs ?? 0));
  await p.click(`#${tab}-run`);
  await p.waitForFunction(([t, k]) => Number(document.querySelector(`#panel-${t}`).dataset.runs ?? 0) > k, [tab, n], { timeout: 120_000 });
  return p.$eval(`#${tab}-error`, (e) => (e.hidden ? null : e.textContent));
}

/** Errors the user can see now, anywhere on the page. */
const visibleErrors = (p) => p.$$eval('.error', (es) => es.filter((e) => e.offsetParent !== null).map((e) => e.textContent));

/** The classification tab's views: they must agree with each other. */
const clsState = (p) => p.evaluate(() => ({
  model: document.querySelector('#panel-cls .model-name').textContent,
  labels: !!document.querySelector('#cls-labels').offsetParent,
  back: !document.querySelector('#cls-zero-shot').hidden,
  method: document.querySelector('#cls-method').dataset.method,
  error: document.querySelector('#cls-error').hidden ? null : document.querySelector('#cls-error').textContent,
}));

/** MiniLM + a committed seeded head (tests/heads/NAME) as a user's folder; `drop` leaves a file out. */
function headFolder(head, name, drop = null) {
  const dir = mkdtempSync(join(tmpdir(), 'webert-head-'));
  const folder = join(dir, name);
  mkdirSync(folder);
  for (const f of ['model.safetensors', 'tokenizer.json', 'tokenizer_config.json']) if (f !== drop) copyFileSync(join(MODELS, 'minilm', f), join(folder, f));
  for (const f of ['config.json', 'head.safetensors']) copyFileSync(join(ROOT, 'tests/heads', head, f), join(folder, f));
  return { folder, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

async function loadUrl(p, tab, url) {
  await p.click(`#tab-${tab}`);
  const open = await p.$eval(`#panel-${tab} details.model`, (d) => d.open);
  if (!open) await p.click(`#panel-${tab} summary`);
  await p.fill(`#panel-${tab} .loader input[type=text]`, url);
  await p.click(`#panel-${tab} .loader button`);
  await p.waitForFunction(([t, u]) => {
    const e = document.querySelector(`#${t}-error`);
    return !e.hidden && e.textContent.startsWith(`Could not load ${u}:`);
  }, [tab, url], { timeout: 60_000 });
  return p.textContent(`#${tab}-error`);
}

test('first minute: the sample text comes out right, one progress row per model with its size', T, async () => {
  await page.click('#tab-sim'); // MiniLM starts while the PII model loads
  await page.click('#tab-ner');
  await page.waitForFunction(() => document.querySelector('#backend').textContent.startsWith('CPU') && !document.querySelector('#loads li'), null, { timeout: 120_000 });
  const rows = await page.evaluate(() => ({ max: window.__maxRows, rows: Object.fromEntries(Object.entries(window.__rows).map(([k, v]) => [k, [...v]])) }));
  assert.ok(rows.max >= 2, `two models loading show two rows at once: ${JSON.stringify(rows)}`);
  for (const [key, texts] of Object.entries(rows.rows)) {
    const name = key.includes('pii') ? 'models/pii' : 'models/minilm';
    assert.ok(texts.every((t) => t.includes(name)), `a row keeps its model's name: ${texts}`);
  }
  const size = (key, mb) => assert.ok(rows.rows[key].some((t) => t.includes(`${mb} MB to download`)), `${key}: ${rows.rows[key]}`);
  size('models/pii/', '14.0');
  size('models/minilm/', '21.8'); // q8 (onnx/model_quantized.onnx), the default
  const err = await run(page, 'ner');
  assert.equal(err, null);
  const got = await page.$$eval('#ner-out mark', (ms) => ms.map((m) => [m.dataset.label, m.textContent]));
  assert.deepEqual(got, [
    ['GIVEN_NAME', 'Maria'], ['SURNAME', 'García'], ['EMAIL', 'maria@garcia.org'], ['PHONE', '+1 415 555 0132'],
    ['BUILDING_NUMBER', '221'], ['STREET_NAME', 'Baker Street'], ['CITY', 'Springfield'], ['STATE', 'IL'], ['ZIP_CODE', '62704'],
  ]);
  assert.match(await page.getAttribute('#panel-ner .help', 'data-tip') ?? '', /first: each word takes the label of its first piece/);
  await page.click('#panel-ner details.code summary');
  assert.match(await page.textContent('#ner-code'), /await pipeline\('token-classification', 'models\/pii\/', \{ device: 'auto' \}\);\nconst entities = await pipe\(text, \{ aggregation_strategy: 'first', patterns: true \}\);/);
  await page.screenshot({ path: join(ARTIFACTS, 'state-ner-1280.png'), fullPage: true });
  await page.check('#ner-redact');
  const chip = await page.$eval('#ner-out mark.redacted', (m) => getComputedStyle(m, '::after').color);
  assert.equal(chip, 'rgb(255, 255, 255)', 'the label chip is white on the dark redaction');
  await page.screenshot({ path: join(ARTIFACTS, 'state-ner-redacted-1280.png'), fullPage: true });
  await page.uncheck('#ner-redact');
});

test('a long text shows its windows and can be cancelled between two', T, async () => {
  await page.click('#tab-ner');
  const sample = await page.inputValue('#ner-text');
  await page.fill('#ner-text', 'John Smith lives at 42 Elm Street, Springfield, IL 62704. '.repeat(500));
  const n = await page.$eval('#panel-ner', (e) => Number(e.dataset.runs ?? 0));
  await page.click('#ner-run');
  await page.waitForFunction(() => /^window [2-9]\d* of \d+…$/.test(document.querySelector('#ner-ms').textContent), null, { timeout: 120_000 });
  assert.ok(await page.isVisible('#ner-cancel'));
  await page.screenshot({ path: join(ARTIFACTS, 'state-ner-long-progress-1280.png'), fullPage: true });
  await page.click('#ner-cancel');
  await page.waitForFunction((k) => Number(document.querySelector('#panel-ner').dataset.runs) > k, n, { timeout: 60_000 });
  assert.match(await page.textContent('#ner-ms'), /^Cancelled after \d+ of (\d+) windows\.$/);
  assert.deepEqual(await visibleErrors(page), []);
  assert.equal(await page.textContent('#ner-out'), '');
  assert.equal(await page.isVisible('#ner-cancel'), false);
  await page.fill('#ner-text', sample);
  assert.equal(await run(page, 'ner'), null, 'the next run answers');
  assert.equal(await page.$$eval('#ner-out mark', (ms) => ms.length), 9);
});

test('classification: a failed load leaves every view on the model in use', T, async () => {
  await page.click('#tab-cls');
  await page.waitForFunction(() => document.querySelector('#cls-method').dataset.method === 'similarity');
  const initial = await clsState(page);
  assert.deepEqual({ ...initial, error: null }, { model: 'models/minilm (q8), zero-shot by sentence similarity', labels: true, back: false, method: 'similarity', error: null });

  const msg = await loadUrl(page, 'cls', 'https://example.invalid/model/');
  assert.match(msg, /^Could not load https:\/\/example\.invalid\/model\/: network error fetching https:\/\/example\.invalid\/model\/config\.json: Failed to fetch\. The server may not allow cross-origin requests/);
  assert.deepEqual({ ...(await clsState(page)), error: null }, { ...initial, error: null });
  await page.fill('#cls-labels', 'hardware, football');
  assert.equal(await run(page, 'cls'), null, 'Classify works, and clears the load error');
  assert.deepEqual((await page.$$eval('#cls-out li', (li) => li.map((l) => l.dataset.label))).sort(), ['football', 'hardware']);

  // A classifier loads, then a folder without tokenizer.json fails: the classifier stays.
  const good = headFolder('seqcls', 'my-classifier');
  const bad = headFolder('seqcls', 'no-tokenizer', 'tokenizer.json');
  try {
    await page.setInputFiles('#panel-cls input[type=file]', good.folder);
    await page.waitForFunction(() => document.querySelector('#cls-method').dataset.method === 'classifier', null, { timeout: 120_000 });
    const classifier = await clsState(page);
    assert.deepEqual(classifier, { model: 'my-classifier', labels: false, back: true, method: 'classifier', error: null });
    await page.setInputFiles('#panel-cls input[type=file]', bad.folder);
    await page.waitForFunction(() => !document.querySelector('#cls-error').hidden, null, { timeout: 60_000 });
    const after = await clsState(page);
    assert.match(after.error, /Could not load no-tokenizer: .*has no tokenizer\.json/);
    assert.deepEqual({ ...after, error: null }, classifier);
    await page.screenshot({ path: join(ARTIFACTS, 'state-cls-failed-load-1280.png'), fullPage: true });
    assert.equal(await run(page, 'cls'), null);
    assert.deepEqual((await page.$$eval('#cls-out li', (li) => li.map((l) => l.dataset.label))).sort(), ['negative', 'neutral', 'positive']);
    await page.click('#cls-zero-shot');
    await page.waitForFunction(() => document.querySelector('#cls-method').dataset.method === 'similarity', null, { timeout: 120_000 });
    assert.deepEqual({ ...(await clsState(page)), error: null }, { ...initial, error: null });
  } finally {
    good.remove();
    bad.remove();
  }
});

test('classification: an NLI model gives zero-shot by entailment, as the HF pipeline', T, async () => {
  await page.click('#tab-cls');
  const nli = headFolder('nli', 'my-nli');
  try {
    await page.setInputFiles('#panel-cls input[type=file]', nli.folder);
    await page.waitForFunction(() => document.querySelector('#cls-method').dataset.method === 'nli', null, { timeout: 120_000 });
    assert.deepEqual(await clsState(page), { model: 'my-nli', labels: true, back: true, method: 'nli', error: null });
    assert.match(await page.textContent('#cls-method'), /entailment/);
    for (const c of golden('nli.json').cases.filter((x) => x.texts.length === 1)) {
      await page.fill('#cls-text', c.texts[0]);
      await page.fill('#cls-labels', c.candidate_labels.join(', '));
      await page.fill('#cls-template', c.hypothesis_template ?? 'This example is {}.');
      for (const key of ['single_label', 'multi_label']) {
        await page.setChecked('#cls-multi', key === 'multi_label');
        assert.equal(await run(page, 'cls'), null);
        const got = await page.$$eval('#cls-out li', (li) => li.map((l) => [l.dataset.label, Number(l.dataset.score)]));
        const want = c.results[0][key];
        assert.deepEqual(got.map((x) => x[0]), want.labels, `${c.name} ${key}`);
        got.forEach(([, s], i) => assert.ok(Math.abs(s - want.scores[i]) < 1e-4, `${c.name} ${key}: ${s} vs ${want.scores[i]}`));
        assert.equal(await page.$eval('#cls-out', (e) => e.dataset.method), 'nli');
      }
    }
    await page.setChecked('#cls-multi', false);
    await page.click('#panel-cls details.code summary');
    assert.match(await page.textContent('#cls-code'), /pipeline\('zero-shot-classification', files .*\n.*multi_label: false, hypothesis_template: /);
    await page.screenshot({ path: join(ARTIFACTS, 'state-cls-nli-1280.png'), fullPage: true });
    await page.click('#cls-zero-shot');
    await page.waitForFunction(() => document.querySelector('#cls-method').dataset.method === 'similarity', null, { timeout: 120_000 });
  } finally {
    nli.remove();
  }
});

test('classification: a text past the model\'s limit is classified as cut there, and the tab says so', T, async () => {
  await page.click('#tab-cls');
  await page.fill('#cls-labels', 'technology, sports');
  await page.fill('#cls-text', `The match went to penalties. ${'The crowd cheered again. '.repeat(120)}`);
  assert.equal(await run(page, 'cls'), null);
  assert.equal(await page.$$eval('#cls-out li', (li) => li.length), 2);
  assert.ok(await page.isVisible('#cls-cut'));
  assert.match(await page.textContent('#cls-cut'), /^This input is \d{3,} tokens and the model reads at most 512: it was cut there \(truncation: true\)/);
  await page.fill('#cls-text', 'The match went to penalties.');
  assert.equal(await run(page, 'cls'), null);
  assert.equal(await page.isHidden('#cls-cut'), true, 'a text that fits is not said to be cut');
});

test('errors stay in their tab, are cleared on success, and never sit above a stale answer', T, async () => {
  const msg = await loadUrl(page, 'qa', 'models/nothing-here/');
  assert.match(msg, /Could not load models\/nothing-here\/: http:\/\/127\.0\.0\.1:\d+\/models\/nothing-here\/config\.json: HTTP 404/);
  assert.equal(await page.isDisabled('#qa-run'), true);
  await page.click('#tab-ner');
  assert.deepEqual(await visibleErrors(page), [], 'the QA error does not follow to the PII tab');
  await page.click('#tab-qa');
  assert.equal((await visibleErrors(page)).length, 1, 'it is still there in its own tab');
  const qa = headFolder('qa', 'my-qa-model');
  try {
    await page.setInputFiles('#panel-qa input[type=file]', qa.folder);
    await page.waitForFunction(() => !document.querySelector('#qa-run').disabled, null, { timeout: 120_000 });
    assert.deepEqual(await visibleErrors(page), [], 'a successful load clears the load error');
    assert.equal(await run(page, 'qa'), null);
    assert.ok(await page.isVisible('#qa-out mark'));
    await page.fill('#qa-question', '  ');
    assert.match(await run(page, 'qa'), /the question is empty/);
    assert.equal(await page.textContent('#qa-out'), '', 'no stale answer under the error');
    assert.equal(await page.textContent('#qa-ms'), '');
    await page.screenshot({ path: join(ARTIFACTS, 'state-qa-empty-question-1280.png'), fullPage: true });
    await page.fill('#qa-question', 'Where was Marie Curie born?');
    assert.equal(await run(page, 'qa'), null);
    assert.deepEqual(await visibleErrors(page), []);
  } finally {
    qa.remove();
  }
});

test('a server without CORS gets a hint; Hugging Face addresses stay absolute', T, async () => {
  const other = `http://127.0.0.1:${noCors.address().port}/model/`;
  const msg = await loadUrl(page, 'sim', other);
  assert.match(msg, new RegExp(`network error fetching ${other}config\\.json: Failed to fetch\\. The server may not allow cross-origin requests from http://127\\.0\\.0\\.1:\\d+ \\(CORS: it must answer with Access-Control-Allow-Origin\\)`));
  // the package says the same to every user, not only the demo
  const pkg = await page.evaluate(async (url) => {
    const { pipeline } = await import('/pkg/webert.js');
    const message = (p) => p.then(() => null, (e) => e.message);
    return {
      cors: await message(pipeline('feature-extraction', url)),
      sameOrigin: await message(pipeline('feature-extraction', '/models/nothing/')),
      bare: await message(pipeline('feature-extraction', 'huggingface.co/org/model')),
      absolute: await message(pipeline('feature-extraction', 'https://huggingface.co/org/model')),
    };
  }, other);
  assert.match(pkg.cors, /Failed to fetch\. The server may not allow cross-origin requests/);
  assert.doesNotMatch(pkg.sameOrigin, /CORS/);
  for (const m of [pkg.bare, pkg.absolute]) assert.match(m, /^network error fetching https:\/\/huggingface\.co\/org\/model\/resolve\/main\/config\.json: /);
  const typed = await loadUrl(page, 'sim', 'huggingface.co/org/model');
  assert.match(typed, /fetching https:\/\/huggingface\.co\/org\/model\/resolve\/main\/config\.json/);
  assert.doesNotMatch(typed, /fetching http:\/\/127\.0\.0\.1/);
  // the similarity tab still runs on its MiniLM
  assert.equal(await page.textContent('#panel-sim .model-name'), 'models/minilm (all-MiniLM-L6-v2, q8)');
  assert.equal(await run(page, 'sim'), null);
  await page.screenshot({ path: join(ARTIFACTS, 'state-sim-1280.png'), fullPage: true });
});

test('phone width (390 px): tabs on one line, nothing wider than the screen, score columns intact', T, async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    const tops = await page.$$eval('[role=tab]', (ts) => ts.map((t) => [t.getBoundingClientRect().top, t.getBoundingClientRect().right]));
    assert.equal(new Set(tops.map((t) => t[0])).size, 1, `tabs wrapped: ${JSON.stringify(tops)}`);
    assert.ok(Math.max(...tops.map((t) => t[1])) <= 390, `tabs reach past the screen: ${JSON.stringify(tops)}`);
    for (const tab of ['ner', 'cls', 'qa', 'sim']) {
      await page.click(`#tab-${tab}`);
      if (tab !== 'qa') assert.equal(await run(page, tab), null);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${tab}: the page is ${overflow}px wider than the phone`);
      // every score sits on its own line's right edge, inside the screen
      const scores = await page.$$eval(`#panel-${tab} .score, #panel-${tab} td.num`, (ss) => ss.filter((s) => s.offsetParent).map((s) => {
        const text = document.createRange();
        text.selectNodeContents(s);
        const lines = new Set([...text.getClientRects()].map((r) => Math.round(r.top))).size;
        return { right: Math.round(s.getBoundingClientRect().right), lines, text: s.textContent };
      }));
      for (const s of scores) {
        assert.ok(s.right <= 390, `${tab}: ${s.text} ends at ${s.right}px`);
        assert.equal(s.lines, 1, `${tab}: ${s.text} wraps`);
      }
      if (tab === 'cls' || tab === 'sim') assert.equal(new Set(scores.map((s) => s.right)).size, 1, `${tab}: scores aligned`);
      await page.screenshot({ path: join(ARTIFACTS, `state-phone-${tab}.png`), fullPage: true });
    }
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
  assert.deepEqual(browser.logs.filter((l) => l.startsWith('[pageerror]')), []);
});
