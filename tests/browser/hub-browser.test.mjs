// Model ids in headless Chromium: a cross-origin isolated page (COOP/COEP) loads an id from a
// local mock of the Hugging Face Hub on another origin (tests/mock-hub.mjs: CORS and CORP
// headers, weights redirected to a "CDN" path), in the package's Web Worker, keeps the files in
// the Cache API and loads them from there the next time, keeps nothing of a failed download,
// and names the dtypes a model has; options, truncation and QA's forms answer as in Node. No test
// reaches the internet.
//   node --test tests/browser/hub-browser.test.mjs      (after scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODELS, PKG, ROOT, requireModels } from './golden.mjs';
import { launch } from './browser.mjs';
import { serve } from '../../scripts/serve.mjs';
import { serveHub } from '../mock-hub.mjs';

requireModels();
const TINY = join(ROOT, 'tests/tiny/distilbert-seqcls');
const TEXT = 'the cat sat on the mat';
const T = { timeout: 180_000 };
let hub;
let server;
let browser;
let page;
let blank;
let ettin;

before(async () => {
  // The demo's fluency entry, transformers.js's default fill-mask id (Ettin, a ModernBERT ONNX
  // export): the tiny ModernBERT masked LM's files and its q8 export in the repo's layout.
  ettin = mkdtempSync(join(tmpdir(), 'webert-ettin-'));
  const tiny = join(ROOT, 'tests/tiny/modernbert-mlm');
  for (const f of readdirSync(tiny).filter((f) => f.endsWith('.json') && f !== 'golden.json')) cpSync(join(tiny, f), join(ettin, f));
  cpSync(join(ROOT, 'tests/onnx-exports/modernbert-mlm/onnx'), join(ettin, 'onnx'), { recursive: true });
  hub = await serveHub({
    repos: {
      'test/tiny-seqcls': { dir: TINY },
      'test/pii': { dir: join(MODELS, 'pii') },
      't/truncated': { dir: TINY, faults: { 'model.safetensors': 'truncate' } },
      // A QA model under the demo's QA entry's id, with safetensors only (no q8 file).
      'Xenova/distilbert-base-cased-distilled-squad': { dir: join(ROOT, 'tests/tiny/electra-qa') },
      // The demo's similarity entry: the shipped MiniLM folder, q8 included (scripts/setup.sh).
      'Xenova/all-MiniLM-L6-v2': { dir: join(MODELS, 'minilm') },
      'onnx-community/ettin-encoder-32m-ONNX': { dir: ettin },
    },
  });
  blank = mkdtempSync(join(tmpdir(), 'webert-hub-page-'));
  writeFileSync(join(blank, 'index.html'), '<!doctype html><meta charset="utf-8"><title>webert hub test</title>');
  server = await serve({ mounts: { '/': join(ROOT, 'www'), '/models/': MODELS, '/blank/': blank } });
  browser = await launch({ webgpu: false });
  page = browser.page;
  await page.goto(`${server.url}blank/`);
});

after(async () => {
  await browser?.close();
  await server?.close();
  await hub?.close();
  rmSync(blank, { recursive: true, force: true });
  rmSync(ettin, { recursive: true, force: true });
});

/** Loads `id` in the page (remote host: the mock hub) and classifies TEXT; the error's message if it fails. */
function load(id, options = {}) {
  return page.evaluate(async ({ id, options, host, text }) => {
    const { pipeline, env } = await import('/pkg/webert.js');
    env.remoteHost = host;
    try {
      const clf = await pipeline('text-classification', id, { device: 'cpu', ...options });
      const out = await clf(text, { top_k: null });
      clf.dispose();
      return { out, isolated: crossOriginIsolated };
    } catch (e) {
      return { error: e.message };
    }
  }, { id, options, host: hub.url, text: TEXT });
}

const cached = () => page.evaluate(async () => (await (await caches.open('webert-models-v1')).keys()).map((r) => r.url));

test('an id loads cross-origin through the redirect, is cached, and loads from the cache (local_files_only too)', T, async () => {
  const { pipeline } = await import(join(PKG, 'webert.js'));
  const local = await pipeline('text-classification', TINY);
  const want = await local(TEXT, { top_k: null });
  const first = await load('test/tiny-seqcls');
  assert.equal(first.error, undefined, first.error);
  assert.equal(first.isolated, true);
  assert.deepEqual(first.out.map((x) => x.label), want.map((x) => x.label));
  first.out.forEach((x, i) => assert.ok(Math.abs(x.score - want[i].score) < 1e-4, x.label));
  assert.ok(hub.requests('test/tiny-seqcls', 'model.safetensors').some((r) => r.path.startsWith('/cdn/')));
  const keys = await cached();
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) {
    assert.ok(keys.includes(`${hub.url}/test/tiny-seqcls/resolve/main/${f}`), `${f} in ${keys}`);
  }
  const n = hub.log.length;
  const again = await load('test/tiny-seqcls');
  assert.deepEqual(again.out, first.out);
  assert.equal(hub.log.length, n, 'the second load asked the host nothing');
  // local_files_only (transformers.js's name) reads the Cache API and never the host.
  assert.deepEqual((await load('test/tiny-seqcls', { local_files_only: true })).out, first.out);
  assert.equal(hub.log.length, n, 'local_files_only asked the host nothing');
  const left = await page.evaluate(async (host) => {
    const { clearCache, env } = await import('/pkg/webert.js');
    env.remoteHost = host;
    await clearCache('test/tiny-seqcls');
    return (await (await caches.open('webert-models-v1')).keys()).map((r) => r.url);
  }, hub.url);
  assert.deepEqual(left.filter((u) => u.includes('/test/tiny-seqcls/')), [], 'clearCache(id) removed the id');
  const gone = await load('test/tiny-seqcls', { local_files_only: true });
  assert.match(gone.error ?? '', /model test\/tiny-seqcls .*not found locally .*local_files_only is set/);
  assert.equal(hub.log.length, n, 'an id not cached, with local_files_only: the host is still not asked');
});

test('a cut-off download fails clearly and leaves nothing in the cache', T, async () => {
  const failed = await load('t/truncated');
  assert.match(failed.error ?? '', /network error reading http:\S+\/t\/truncated\/resolve\/main\/model\.safetensors after \d+ of \d+ bytes/);
  assert.ok(!(await cached()).some((u) => u.includes('t/truncated/resolve/main/model.safetensors')));
  hub.fault('t/truncated', 'model.safetensors', null);
  const ok = await load('t/truncated');
  assert.equal(ok.error, undefined, ok.error);
  assert.ok((await cached()).some((u) => u.includes('t/truncated/resolve/main/model.safetensors')));
});

test('a dtype the model lacks names the ones it has', T, async () => {
  const r = await load('test/pii', { dtype: 'q8' });
  assert.match(r.error ?? '', /model test\/pii \(revision main\) on http:\/\/127\.0\.0\.1:\d+: has no q8 weights \(onnx\/model_quantized\.onnx\); it has: q4 \(onnx\/model_q4\.onnx\)/);
});

test('demo: Hub entries load by id from the host, and say why they are unavailable offline', T, async () => {
  const demo = await browser.context.newPage();
  await demo.goto(`${server.url}?device=cpu&hub=${encodeURIComponent(hub.url)}`);
  await demo.click('#tab-qa');
  const entry = '#panel-qa .hub-model[data-id="Xenova/distilbert-base-cased-distilled-squad"]';
  assert.match(await demo.textContent('#panel-qa .hub-note'), /not tested here/);
  await demo.click(entry);
  // The entry asks for q8, which this fixture lacks: the page names the id and what there is.
  await demo.waitForFunction(() => document.querySelector('#qa-error').textContent.includes('Xenova'), null, { timeout: 60_000 });
  const error = await demo.textContent('#qa-error');
  assert.match(error, /Could not load Xenova\/distilbert-base-cased-distilled-squad \(Hugging Face Hub, q8\): .*has no q8 weights .*it has: fp32 \(safetensors\)/);
  assert.ok(hub.requests('Xenova/distilbert-base-cased-distilled-squad', 'config.json').length > 0);
  await browser.context.setOffline(true);
  await demo.waitForFunction((sel) => document.querySelector(sel).disabled, entry);
  assert.match(await demo.textContent('#panel-qa .hub-note'), /Unavailable: this page is offline/);
  await browser.context.setOffline(false);
  await demo.waitForFunction((sel) => !document.querySelector(sel).disabled, entry);
  await demo.close();
});

test('demo: a Hub entry shows its download size before the weights arrive', T, async () => {
  const demo = await browser.context.newPage();
  // Every text the progress rows have, in order.
  await demo.addInitScript(() => {
    window.__rows = [];
    addEventListener('DOMContentLoaded', () => new MutationObserver(() => {
      for (const li of document.querySelectorAll('#loads li')) window.__rows.push(li.textContent);
    }).observe(document.querySelector('#loads'), { subtree: true, childList: true, characterData: true }));
  });
  await demo.goto(`${server.url}?device=cpu&hub=${encodeURIComponent(hub.url)}`);
  await demo.click('#tab-sim');
  await demo.click('#panel-sim summary');
  await demo.click('#panel-sim .hub-model[data-id="Xenova/all-MiniLM-L6-v2"]');
  await demo.waitForFunction(() => document.querySelector('#panel-sim .model-name').textContent.startsWith('Xenova/all-MiniLM-L6-v2'), null, { timeout: 120_000 });
  assert.equal(await demo.$eval('#sim-error', (e) => (e.hidden ? null : e.textContent)), null);
  const size = statSync(join(MODELS, 'minilm/onnx/model_quantized.onnx')).size;
  const rows = (await demo.evaluate(() => window.__rows)).filter((t) => t.includes('Xenova/all-MiniLM-L6-v2'));
  // A row whose bytes are the small text files only, and whose total already counts the weights.
  const early = rows.map((t) => t.match(/Downloading .*: ([\d.]+) \/ ([\d.]+) MB/)).filter(Boolean)
    .find((m) => Number(m[1]) * 1048576 < size / 10 && Number(m[2]) * 1048576 >= size - 52429);
  assert.ok(early, `the size shows before the weights' bytes: ${JSON.stringify(rows.slice(0, 8))}`);
  // The page asked for it with HEAD, through the Hub's redirect, which says the size too.
  const heads = hub.requests('Xenova/all-MiniLM-L6-v2', 'onnx/model_quantized.onnx').filter((r) => r.method === 'HEAD');
  assert.deepEqual(heads.map((r) => r.path.split('/')[1]), ['Xenova', 'cdn'], JSON.stringify(heads));
  await demo.close();
});

test('demo: the fluency entry (a ModernBERT masked LM by id) ranks sentences', T, async () => {
  const demo = await browser.context.newPage();
  await demo.goto(`${server.url}?device=cpu&hub=${encodeURIComponent(hub.url)}`);
  await demo.click('#tab-sim');
  await demo.click('#panel-pt > summary');
  await demo.click('#panel-pt .hub-model[data-id="onnx-community/ettin-encoder-32m-ONNX"]');
  await demo.waitForFunction(() => !document.querySelector('#pt-run').disabled, null, { timeout: 120_000 });
  // A masked LM has no next-sentence head: that button stays off, saying why.
  assert.equal(await demo.isDisabled('#pt-nsp-run'), true);
  assert.match(await demo.getAttribute('#pt-nsp-run', 'title'), /^No next-sentence head: /);
  // The Hub notes name the host the models come from (?hub=), not huggingface.co.
  assert.match(await demo.textContent('#panel-pt .hub-note'), new RegExp(`Downloaded from ${new URL(hub.url).host} on first use`));
  await demo.click('#pt-run');
  await demo.waitForFunction(() => document.querySelectorAll('#pt-out li').length === 3
    || !document.querySelector('#pt-error').hidden, null, { timeout: 120_000 });
  assert.equal(await demo.$eval('#pt-error', (e) => (e.hidden ? null : e.textContent)), null);
  const rows = await demo.$$eval('#pt-out li', (lis) => lis.map((li) => ({
    pll: Number(li.dataset.pll),
    tokens: [...li.querySelectorAll('.token')].map((t) => Number(t.dataset.logProb)),
  })));
  for (const r of rows) {
    assert.ok(r.tokens.length > 0 && r.tokens.every((lp) => Number.isFinite(lp) && lp <= 0), JSON.stringify(r));
    assert.ok(Math.abs(r.tokens.reduce((a, b) => a + b, 0) - r.pll) < 1e-3, JSON.stringify(r));
  }
  assert.ok(rows.every((r, i) => i === 0 || rows[i - 1].pll >= r.pll), 'ranked, likeliest first');
  // the q8 file, as the entry says
  assert.ok(hub.requests('onnx-community/ettin-encoder-32m-ONNX', 'onnx/model_quantized.onnx').some((r) => r.method === 'GET'));
  await demo.close();
});

test("in a browser an id with no dtype loads q8 where the repo has it (transformers.js's choice), with its progress events", T, async () => {
  const ID = 'Xenova/all-MiniLM-L6-v2';
  const gets = (file) => hub.requests(ID, file).filter((r) => r.method === 'GET').length;
  const before = gets('model.safetensors');
  const r = await page.evaluate(async ({ host, id }) => {
    const { pipeline, env } = await import('/pkg/webert.js');
    env.remoteHost = host;
    const events = [];
    const p = await pipeline('feature-extraction', id, { device: 'cpu', cache: false, progress_callback: (e) => events.push(e) });
    const files = p.info.files;
    p.dispose();
    return { files, events: events.filter((e) => e.status) };
  }, { host: hub.url, id: ID });
  assert.ok(r.files.includes('onnx/model_quantized.onnx'), r.files.join(', '));
  assert.equal(gets('model.safetensors'), before, 'no f32 weights fetched');
  const weights = r.events.filter((e) => e.file === 'onnx/model_quantized.onnx');
  assert.deepEqual([weights[0].status, weights[1].status, weights.at(-1).status], ['initiate', 'download', 'done']);
  const last = weights.filter((e) => e.status === 'progress').at(-1);
  assert.ok(last.progress === 100 && last.loaded === last.total && last.total > 1e6, JSON.stringify(last));
  assert.deepEqual(r.events.at(-1), { status: 'ready', task: 'feature-extraction', model: ID });
});

test('in a browser as in Node: options refused by name, a long text names `truncation: true`, QA takes its object and batched forms', T, async () => {
  const r = await page.evaluate(async ({ host }) => {
    const { pipeline, env } = await import('/pkg/webert.js');
    env.remoteHost = host;
    const message = (p) => p.then(() => null, (e) => e.message);
    const fx = await pipeline('feature-extraction', '/models/minilm/', { device: 'wasm', dtype: 'q8' });
    const qa = await pipeline('question-answering', 'Xenova/distilbert-base-cased-distilled-squad', { device: 'cpu' });
    const q = 'Where does the cat sit?';
    const c = 'The cat sits on the mat.';
    const out = {
      device: fx.device,
      misspelt: await message(pipeline('feature-extraction', '/models/minilm/', { devcie: 'cpu' })),
      cacheDir: await message(pipeline('feature-extraction', '/models/minilm/', { cache_dir: '/tmp' })),
      long: await message(fx('word '.repeat(600), { pooling: 'mean' })),
      cut: (await fx('word '.repeat(600), { pooling: 'mean', truncation: true })).dims,
      qa: await qa(q, c),
      object: await qa({ question: q, context: c }),
      batched: await qa([q, q], [c, c]),
    };
    fx.dispose();
    qa.dispose();
    return out;
  }, { host: hub.url });
  assert.equal(r.device, 'cpu', "device: 'wasm' is the CPU");
  assert.match(r.misspelt, /unknown pipeline option `devcie` \(did you mean `device`\?\)/);
  assert.match(r.cacheDir, /pipeline option `cache_dir` is for Node; a browser keeps downloads in the Cache API/);
  assert.match(r.long, /input is \d+ tokens; the model takes at most 512 \(to cut it there: `truncation: true` in JS/);
  assert.deepEqual(r.cut, [1, 384]);
  assert.equal(typeof r.qa.answer, 'string');
  assert.deepEqual(r.object, r.qa);
  assert.deepEqual(r.batched, [r.qa, r.qa]);
});
