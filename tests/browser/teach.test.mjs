// The demo's Teach mode in headless Chromium: examples pasted as label<TAB>text lines, trained on
// the Classification tab's MiniLM, held-out texts against scikit-learn (tests/golden/train.json),
// the head kept in IndexedDB across a reload, downloaded, and loaded back from the file.
//   node --test tests/browser/teach.test.mjs      (after scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODELS, ROOT, golden, requireModels } from './golden.mjs';
import { launch } from './browser.mjs';
import { assertLayout, layoutProblems } from './layout.mjs';
import { serve } from '../../scripts/serve.mjs';

requireModels();
const T = { timeout: 300_000 };
const G = golden('train.json');
let server;
let browser;
let page;

before(async () => {
  server = await serve({ mounts: { '/': join(ROOT, 'www'), '/models/': MODELS } });
  browser = await launch();
  page = browser.page;
  await page.goto(`${server.url}?dtype=fp32`); // the goldens are features of the f32 MiniLM
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function noError() {
  assert.equal(await page.$eval('#cls-error', (e) => (e.hidden ? null : e.textContent)), null);
}

async function classify(text) {
  const before = await page.$eval('#panel-cls', (e) => Number(e.dataset.runs ?? 0));
  await page.fill('#cls-text', text);
  await page.click('#cls-run');
  await page.waitForFunction((n) => Number(document.querySelector('#panel-cls').dataset.runs ?? 0) > n, before, { timeout: 120_000 });
  await noError();
  return page.$$eval('#cls-out li', (li) => li.map((l) => [l.dataset.label, Number(l.dataset.score)]));
}

async function assertHeldOut(c) {
  for (const [i, text] of G.sets[c.set].held_out.entries()) {
    const got = await classify(text);
    assert.equal(got[0][0], c.held_out_labels[i], `text ${i}`);
    c.classes.forEach((label, j) => {
      const score = got.find(([l]) => l === label)[1];
      assert.ok(Math.abs(score - c.held_out_proba[i][j]) <= 2e-3, `text ${i} ${label}: ${score} vs ${c.held_out_proba[i][j]}`);
    });
  }
}

test('Teach mode: train on pasted examples, classify like scikit-learn, keep the head', T, async () => {
  const c = G.cases.find((x) => x.set === 'topics' && x.C === 10);
  await page.click('#tab-cls');
  await page.check('#cls-teach-mode');
  assert.equal(await page.isVisible('#cls-labels'), false);
  const lines = G.sets.topics.examples.map((e) => `${e.label}\t${e.text}`).join('\n');
  await page.fill('#teach-examples', lines);
  await page.fill('#teach-c', '10');
  await page.click('#teach-train');
  await page.waitForFunction(() => Number(document.querySelector('#panel-cls').dataset.trained ?? 0) > 0, null, { timeout: 180_000 });
  await noError();
  assert.match(await page.textContent('#teach-status'), /Trained: Finance, cooking, sports, technology \(40 examples, C = 10\)/);
  await assertHeldOut(c);

  const download = page.waitForEvent('download');
  await page.click('#teach-download');
  const file = join(mkdtempSync(join(tmpdir(), 'webert-teach-')), 'head.safetensors');
  await (await download).saveAs(file);
  const bytes = readFileSync(file);
  assert.ok(bytes.length > 1000 && bytes.includes('webert-classifier-head'), 'a head file');

  // After a reload the head comes back from IndexedDB.
  await page.reload();
  await page.click('#tab-cls');
  await page.waitForFunction(() => document.querySelector('#teach-status').textContent.includes('saved'), null, { timeout: 30_000 });
  await page.check('#cls-teach-mode');
  const again = await classify(G.sets.topics.held_out[0]);
  assert.equal(again[0][0], c.held_out_labels[0]);
  assert.match(await page.textContent('#teach-status'), /Saved head: Finance, cooking, sports, technology/);

  // A head file loads from the picker; a broken one is an error on the page, not a crash.
  writeFileSync(`${file}.bad`, 'not a head');
  await page.setInputFiles('#teach-load', `${file}.bad`);
  await page.waitForFunction(() => !document.querySelector('#cls-error').hidden, null, { timeout: 60_000 });
  assert.match(await page.textContent('#cls-error'), /Could not load the head: classifier head: corrupt/);
  await page.setInputFiles('#teach-load', file);
  await page.waitForFunction(() => document.querySelector('#teach-status').textContent.startsWith('Loaded head.safetensors'), null, { timeout: 60_000 });
  await noError();
  await assertHeldOut(c);
});

test('Teach mode lays out at 1280 and 390 px: text a few words wide, radios beside their labels, no zero-shot note', T, async () => {
  await page.click('#tab-cls');
  await page.check('#cls-teach-mode');
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    // Text a few words wide, controls beside their labels, nothing past the edge (layout.mjs).
    assertLayout(`${width} px`, await page.evaluate(layoutProblems, '#panel-cls'));
    assert.equal(await page.isVisible('#cls-method'), false, `${width} px: the zero-shot note shows in Teach mode`);
    await page.screenshot({ path: join(ROOT, `target/browser-artifacts/teach-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.check('input[name=cls-mode][value=model]');
  assert.equal(await page.$eval('#cls-method', (e) => e.hidden), false, 'the note is back outside Teach mode');
});
