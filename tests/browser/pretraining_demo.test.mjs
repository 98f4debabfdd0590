// The Similarity tab's "Fluency & next sentence" section in headless Chromium: a failed load shows
// its error in the section, then the user's BertForPreTraining checkpoint (the seeded NSP head on
// splade-tiny, tests/heads/pretraining) ranks sentences by pseudo-log-likelihood and answers
// IsNext / NotNext, against tests/golden/pll.json and nsp.json; an NSP-only checkpoint says why it
// cannot score fluency. Screenshots at 1280 and 390 px go to target/browser-artifacts/.
//   node --test tests/browser/pretraining_demo.test.mjs      (after scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODELS, ROOT, golden, requireModels, u16 } from './golden.mjs';
import { launch } from './browser.mjs';
import { serve } from '../../scripts/serve.mjs';

requireModels();
const ARTIFACTS = join(ROOT, 'target/browser-artifacts');
mkdirSync(ARTIFACTS, { recursive: true });
const T = { timeout: 300_000 };

let server;
let browser;
let page;
const dirs = [];

before(async () => {
  server = await serve({ mounts: { '/': join(ROOT, 'www'), '/models/': MODELS } });
  browser = await launch({ viewport: { width: 1280, height: 900 } });
  page = browser.page;
  await page.goto(`${server.url}?device=cpu`);
  await page.click('#tab-sim');
  await page.click('#panel-pt > summary');
});

after(async () => {
  await browser?.close();
  await server?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A checkpoint folder as a user has it: splade-tiny's files with the seeded head's config and tensors. */
function checkpoint(head) {
  const dir = mkdtempSync(join(tmpdir(), 'webert-pt-'));
  dirs.push(dir);
  const folder = join(dir, `my-${head}-model`);
  mkdirSync(folder);
  for (const f of readdirSync(join(MODELS, 'splade-tiny'))) if (f !== 'config.json') copyFileSync(join(MODELS, 'splade-tiny', f), join(folder, f));
  for (const f of ['config.json', 'head.safetensors']) copyFileSync(join(ROOT, 'tests/heads', head, f), join(folder, f));
  return folder;
}

async function load(folder) {
  await page.setInputFiles('#panel-pt .loader input[type=file]', folder);
  await page.waitForFunction((name) => !(document.querySelector('#pt-run').disabled && document.querySelector('#pt-nsp-run').disabled)
    && document.querySelector('#panel-pt .model-name').textContent === name, folder.split('/').pop(), { timeout: 120_000 });
}

/** Clicks a run button of the section; the section's error afterwards, or null. */
async function run(button) {
  const n = await page.$eval('#panel-pt', (e) => Number(e.dataset.runs ?? 0));
  await page.click(button);
  await page.waitForFunction((k) => Number(document.querySelector('#panel-pt').dataset.runs ?? 0) > k, n, { timeout: 120_000 });
  return page.$eval('#pt-error', (e) => (e.hidden ? null : e.textContent));
}

const nspBars = () => page.$$eval('#pt-nsp-out li', (ls) => ls.map((l) => ({ label: l.dataset.label, score: Number(l.dataset.score) })));

test('no default model: a notice, disabled buttons; a failed load shows its error in the section', T, async () => {
  assert.ok(await page.isVisible('#pt-notice'));
  assert.equal(await page.isDisabled('#pt-run'), true);
  assert.equal(await page.isDisabled('#pt-nsp-run'), true);
  assert.match(await page.textContent('#pt-code'), /load a model first/);
  await page.fill('#panel-pt .loader input[type=text]', 'models/nothing-here/');
  await page.click('#panel-pt .loader button');
  await page.waitForFunction(() => !document.querySelector('#pt-error').hidden, null, { timeout: 60_000 });
  assert.match(await page.textContent('#pt-error'), /^Could not load models\/nothing-here\/:/);
  assert.equal(await page.isHidden('#sim-error'), true, 'the error stays in its section');
  assert.equal(await page.textContent('#panel-pt .model-name'), 'none loaded');
  assert.equal(await page.isDisabled('#pt-run'), true);
});

test('BertForPreTraining checkpoint: sentences ranked by PLL with per-token log-probs, and next-sentence bars', T, async () => {
  await load(checkpoint('pretraining'));
  assert.equal(await page.isHidden('#pt-error'), true, 'a successful load clears the error');
  assert.equal(await page.isHidden('#pt-notice'), true);

  const cases = golden('pll.json').cases.filter((c) => c.max_length === null && c.text && c.text.length < 80);
  assert.ok(cases.length >= 4);
  await page.fill('#pt-sentences', cases.map((c) => c.text).join('\n'));
  assert.equal(await run('#pt-run'), null);
  const got = await page.$$eval('#pt-out > li', (ls) => ls.map((l) => ({
    index: Number(l.dataset.index),
    pll: Number(l.dataset.pll),
    tokens: [...l.querySelectorAll('.token')].map((t) => ({ token: t.dataset.token, log_prob: Number(t.dataset.logProb), start: Number(t.dataset.start), end: Number(t.dataset.end), worst: t.classList.contains('worst') })),
  })));
  const order = cases.map((c, i) => i).sort((a, b) => cases[b].pseudo_log_likelihood - cases[a].pseudo_log_likelihood);
  assert.deepEqual(got.map((g) => g.index), order, 'ranked best first');
  for (const g of got) {
    const c = cases[g.index];
    assert.ok(Math.abs(g.pll - c.pseudo_log_likelihood) <= 1e-3 * Math.max(1, Math.abs(c.pseudo_log_likelihood)), `${c.text}: ${g.pll}`);
    assert.deepEqual(g.tokens.map((t) => t.token), c.tokens.map((t) => t.token), c.text);
    g.tokens.forEach((t, i) => {
      assert.ok(Math.abs(t.log_prob - c.tokens[i].log_prob) <= 1e-3, `${c.text}: ${t.token}`);
      assert.deepEqual([t.start, t.end], [u16(c.text, c.tokens[i].start), u16(c.text, c.tokens[i].end)], `${c.text}: ${t.token}`);
    });
    const least = c.tokens.reduce((w, t, i) => (t.log_prob < c.tokens[w].log_prob ? i : w), 0);
    assert.deepEqual(g.tokens.flatMap((t, i) => (t.worst ? [i] : [])), [least], `${c.text}: the least likely token is highlighted`);
  }
  assert.match(await page.textContent('#pt-ms'), /ms/);
  await page.screenshot({ path: join(ARTIFACTS, 'pretraining-pll-1280.png'), fullPage: true });

  const g = golden('nsp.json');
  for (const c of g.models.pretraining.cases) {
    await page.fill('#pt-a', c.text);
    await page.fill('#pt-b', c.text_pair);
    assert.equal(await run('#pt-nsp-run'), null);
    const want = g.labels.map((label, j) => ({ label, score: c.probs[j] })).sort((a, b) => b.score - a.score);
    const bars = await nspBars();
    assert.deepEqual(bars.map((b) => b.label), want.map((w) => w.label), c.text);
    bars.forEach((b, j) => assert.ok(Math.abs(b.score - want[j].score) <= 1e-4, `${c.text}: ${b.label} ${b.score} vs ${want[j].score}`));
  }
  const code = await page.textContent('#pt-code');
  assert.match(code, /pipeline\('text-scoring', files/);
  assert.match(code, /pipeline\('next-sentence-prediction', files/);
  assert.ok(code.includes(`text_pair: '${g.models.pretraining.cases.at(-1).text_pair.replace(/'/g, "\\'")}'`), code);
  await page.screenshot({ path: join(ARTIFACTS, 'pretraining-nsp-1280.png'), fullPage: true });
});

test('NSP-only checkpoint: next sentence works, fluency says the head is missing', T, async () => {
  await load(checkpoint('nsp'));
  const g = golden('nsp.json');
  const c = g.models.nsp.cases[0];
  await page.fill('#pt-a', c.text);
  await page.fill('#pt-b', c.text_pair);
  assert.equal(await run('#pt-nsp-run'), null);
  const want = g.labels.map((label, j) => ({ label, score: c.probs[j] })).sort((a, b) => b.score - a.score);
  (await nspBars()).forEach((b, j) => {
    assert.equal(b.label, want[j].label);
    assert.ok(Math.abs(b.score - want[j].score) <= 1e-4);
  });
  // No masked-LM head: its button is off and says why; the next-sentence result stays.
  assert.equal(await page.isDisabled('#pt-run'), true);
  assert.match(await page.getAttribute('#pt-run', 'title'), /^No masked-LM head: /);
  assert.notEqual(await page.textContent('#pt-nsp-out'), '');
});

test('phone width (390 px): the section fits, scores on one line', T, async () => {
  await load(checkpoint('pretraining'));
  await page.fill('#pt-sentences', 'The cat sat on the mat.\nZoë visited Zürich and São Paulo — naïve café ☕ in 2019!');
  assert.equal(await run('#pt-run'), null);
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    const tops = await page.$$eval('[role=tab]', (ts) => new Set(ts.map((t) => t.getBoundingClientRect().top)).size);
    assert.equal(tops, 1, 'four tabs on one line');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than the phone`);
    const values = await page.$$eval('#panel-pt .pll-value, #panel-pt .token', (vs) => vs.map((v) => {
      const r = document.createRange();
      r.selectNodeContents(v);
      return { right: Math.round(v.getBoundingClientRect().right), text: v.textContent, cls: v.className, lines: new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size };
    }));
    for (const v of values) {
      assert.ok(v.right <= 390, `${v.text} ends at ${v.right}px`);
      if (v.cls === 'pll-value') assert.equal(v.lines, 1, `${v.text} wraps`);
    }
    await page.screenshot({ path: join(ARTIFACTS, 'pretraining-phone-390.png'), fullPage: true });
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
  assert.deepEqual(browser.logs.filter((l) => l.startsWith('[pageerror]')), []);
});
