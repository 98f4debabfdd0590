// Model ids and `dtype` in the built package (Node): ids fetched from a local mock of the Hugging
// Face Hub (tests/mock-hub.mjs: the Hub's URL layout, weights redirected to a "CDN" path,
// faults on demand) through `env.remoteHost`, Hub URLs, revisions, local copies, and clear
// errors. No test reaches the internet.
//   node --test tests/browser/hub.test.mjs      (after scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { pathToFileURL } from 'node:url';
import { MODELS, PKG, ROOT, golden, assertEntities, INT_SCORE_TOL, requireModels } from './golden.mjs';
import { serveHub } from '../mock-hub.mjs';

const { pipeline, env } = await import(join(PKG, 'webert.js'));
requireModels();

const TINY = join(ROOT, 'tests/tiny/distilbert-seqcls');
// transformers.js's default fill-mask model, as a repo of the same layout: config and tokenizer
// of the tiny seeded ModernBERT, its ONNX exports (scripts/make_tiny_onnx_exports.py).
const ETTIN = 'onnx-community/ettin-encoder-32m-ONNX';
const ettinDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'ettin-'));
  const tiny = join(ROOT, 'tests/tiny/modernbert-mlm');
  for (const f of readdirSync(tiny).filter((f) => f.endsWith('.json') && f !== 'golden.json')) cpSync(join(tiny, f), join(dir, f));
  cpSync(join(ROOT, 'tests/onnx-exports/modernbert-mlm/onnx'), join(dir, 'onnx'), { recursive: true });
  return dir;
};
const TEXT = 'the cat sat on the mat';
let hub;
let local;
let ettin;

before(async () => {
  ettin = ettinDir();
  hub = await serveHub({
    repos: {
      'test/tiny-seqcls': { dir: TINY },
      'test/progress': { dir: TINY },
      'test/pii': { dir: join(MODELS, 'pii') },
      'sentence-transformers/all-mpnet-base-v2': { dir: join(ROOT, 'tests/tiny/mpnet-base-st') },
      'Xenova/nli-deberta-v3-xsmall': { dir: join(ROOT, 'tests/tiny/deberta-v3-seqcls') },
      'jinaai/jina-embeddings-v2-small-en': { dir: join(ROOT, 'tests/tiny/jina-v2-base') },
      [ETTIN]: { dir: ettin },
      'onnx-community/all-MiniLM-L6-v2-ONNX': { dir: join(MODELS, 'minilm') },
      't/truncated': { dir: TINY, faults: { 'model.safetensors': 'truncate' } },
      't/lying': { dir: TINY, faults: { 'model.safetensors': 'lying-length' } },
      't/html': { dir: TINY, faults: { 'config.json': 'html' } },
      't/no-tokenizer': { dir: TINY, faults: { 'tokenizer.json': 'missing' } },
      't/flaky': { dir: TINY, faults: { 'tokenizer.json': { kind: 'error500', times: 1 } } },
      'test/disk-cache': { dir: TINY },
      'test/q8-default': { dir: join(MODELS, 'minilm') },
    },
  });
  env.remoteHost = hub.url;
  // The tests count requests: no disk cache but in the test of it.
  env.useFSCache = false;
  local = await pipeline('text-classification', TINY);
});
after(() => {
  hub.close();
  rmSync(ettin, { recursive: true, force: true });
});

const gets = (id, file) => hub.requests(id, file).filter((r) => r.method === 'GET');

test('env has transformers.js names and defaults', async () => {
  const fresh = await import(`${join(PKG, 'env.js')}?fresh`);
  assert.deepEqual({ ...fresh.env }, {
    remoteHost: 'https://huggingface.co',
    remotePathTemplate: '{model}/resolve/{revision}/',
    allowRemoteModels: true,
    allowLocalModels: true, // in Node, as transformers.js
    localModelPath: '/models/',
    useBrowserCache: true,
    cacheDir: new URL('.cache/', pathToFileURL(join(PKG, 'env.js'))).href, // the package's folder, as transformers.js
    useFSCache: true,
    spareWorkerMs: 5000, // webert's own: how long a disposed pipeline's worker waits for the next
    backends: { onnx: { wasm: {}, webgpu: {} } },
  });
});

test('ids of the newer families (MPNet, DeBERTa-v3, Jina v2) answer as their local folders', async () => {
  for (const [id, task, folder] of [
    ['sentence-transformers/all-mpnet-base-v2', 'feature-extraction', 'mpnet-base-st'],
    ['Xenova/nli-deberta-v3-xsmall', 'text-classification', 'deberta-v3-seqcls'],
    ['jinaai/jina-embeddings-v2-small-en', 'feature-extraction', 'jina-v2-base'],
  ]) {
    const remote = await pipeline(task, id);
    const near = await pipeline(task, join(ROOT, 'tests/tiny', folder));
    const options = task === 'text-classification' ? { top_k: null } : { pooling: 'mean', normalize: true };
    assert.deepEqual(await remote(TEXT, options), await near(TEXT, options), id);
    assert.ok(gets(id, 'model.safetensors').length > 0, `${id}: weights from the hub`);
    remote.dispose();
    near.dispose();
  }
});

test("transformers.js's default fill-mask id (Ettin, a ModernBERT ONNX export) fills masks as PyTorch does, every dtype", async () => {
  const g = JSON.parse(readFileSync(join(ROOT, 'tests/tiny/modernbert-mlm/golden.json'), 'utf8'));
  const inputs = g.cases.flatMap((c) => c.inputs).filter((i) => i.mask_positions?.length === 1);
  assert.ok(inputs.length > 0);
  for (const dtype of ['fp32', 'q8', 'q4']) {
    const fill = await pipeline('fill-mask', ETTIN, { dtype });
    const near = await pipeline('fill-mask', ettin, { dtype });
    assert.equal(gets(ETTIN, `onnx/${{ fp32: 'model', q8: 'model_quantized', q4: 'model_q4' }[dtype]}.onnx`).length, 2, dtype);
    for (const input of inputs) {
      const got = await fill(input.text, { top_k: 3 }); // one mask: its predictions, as transformers.js
      const logits = input.logits[0];
      const max = Math.max(...logits);
      const sum = logits.reduce((a, x) => a + Math.exp(x - max), 0);
      const want = logits.map((x, token) => ({ token, score: Math.exp(x - max) / sum })).sort((a, b) => b.score - a.score);
      // f32 weights: PyTorch's probabilities; quantized (near-flat on this random model, so
      // not PyTorch's order; tests/onnx_exports.rs checks them against onnxruntime): what the
      // same files give from a folder.
      if (dtype === 'fp32') {
        assert.deepEqual(got.map((p) => p.token), want.slice(0, 3).map((w) => w.token), input.text);
        got.forEach((p, i) => assert.ok(Math.abs(p.score - want[i].score) < 1e-4, `${input.text}: ${p.score} vs ${want[i].score}`));
      } else {
        assert.deepEqual(got, await near(input.text, { top_k: 3 }), `${dtype} ${input.text}`);
      }
      assert.ok(got.every((p) => !p.sequence.includes('[MASK]')), input.text);
    }
    fill.dispose();
    near.dispose();
  }
});

test("pipeline(task) with no model loads transformers.js's default id for the task, with its dtype", async () => {
  const MINILM = 'onnx-community/all-MiniLM-L6-v2-ONNX';
  const embed = await pipeline('feature-extraction');
  const near = await pipeline('feature-extraction', join(MODELS, 'minilm'), { dtype: 'fp32' });
  assert.deepEqual(await embed(TEXT, { pooling: 'mean' }), await near(TEXT, { pooling: 'mean' }));
  assert.ok(gets(MINILM, 'model.safetensors').length > 0, 'fp32, as transformers.js asks for this task');
  assert.equal(gets(MINILM, 'onnx/model_quantized.onnx').length, 0);
  embed.dispose();
  near.dispose();
  const before = gets(ETTIN, 'onnx/model.onnx').length;
  const fill = await pipeline('fill-mask', undefined, { dtype: 'q8' });
  assert.equal(gets(ETTIN, 'onnx/model.onnx').length, before, 'a dtype given is kept');
  assert.ok(Array.isArray(await fill('the [MASK] sat')));
  fill.dispose();
  await assert.rejects(pipeline('text-scoring'), /pipeline\('text-scoring'\) needs a model \(transformers\.js has no default for it either\)/);
  env.allowRemoteModels = false;
  try {
    await assert.rejects(pipeline('embeddings'), /^Error: pipeline\('embeddings'\) with no model loads transformers\.js's default, onnx-community\/all-MiniLM-L6-v2-ONNX: .*env\.allowRemoteModels is false\. Pass a model/);
  } finally {
    env.allowRemoteModels = true;
  }
});

test("progress_callback gets transformers.js's events: per file initiate, download, progress, done; progress_total; ready", async () => {
  const seen = [];
  const clf = await pipeline('text-classification', 'test/progress', { progress_callback: (e) => seen.push(e) });
  const ours = seen.filter((e) => e.status);
  const files = [...new Set(ours.filter((e) => e.file).map((e) => e.file))].sort();
  assert.deepEqual(files, ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
  for (const file of files) {
    const steps = ours.filter((e) => e.file === file);
    assert.deepEqual(steps.slice(0, 2).map((e) => e.status), ['initiate', 'download'], file);
    assert.equal(steps.at(-1).status, 'done', file);
    const progress = steps.filter((e) => e.status === 'progress');
    assert.ok(progress.length >= 1 && steps.slice(2, -1).every((e) => e.status === 'progress'), file);
    const end = progress.at(-1);
    assert.ok(end.total > 0 && end.loaded === end.total && end.progress === 100, `${file}: ${JSON.stringify(end)}`);
    assert.ok(steps.every((e) => e.name === 'test/progress'));
  }
  const size = readFileSync(join(TINY, 'model.safetensors')).byteLength;
  assert.equal(ours.filter((e) => e.file === 'model.safetensors' && e.status === 'progress').at(-1).total, size);
  const totals = ours.filter((e) => e.status === 'progress_total');
  assert.ok(totals.length > 0 && totals.at(-1).progress === 100 && totals.at(-1).files['model.safetensors'].total === size);
  assert.deepEqual(ours.at(-1), { status: 'ready', task: 'text-classification', model: 'test/progress' });
  assert.ok(seen.some((e) => e.stage === 'download'), "webert's own events come too");
  clf.dispose();
});

test("pipeline options: transformers.js's names honoured or refused by name, misspelt keys refused", async () => {
  await assert.rejects(pipeline('text-classification', TINY, { devcie: 'cpu' }), /unknown pipeline option `devcie` \(did you mean `device`\?\)/);
  await assert.rejects(pipeline('text-classification', TINY, { session_options: {} }), /`session_options` is transformers\.js's, and webert does not run ONNX Runtime/);
  const wasm = await pipeline('text-classification', TINY, { device: 'wasm' });
  assert.equal(wasm.device, 'cpu');
  wasm.dispose();
  await assert.rejects(pipeline('text-classification', TINY, { device: 'gpu' }), /WebGPU is not available here/);
  await assert.rejects(pipeline('text-classification', TINY, { device: 'webnn' }), /unknown device "webnn"/);
  // A relative path from the wrong directory reads as an id: the error says both.
  const calls = hub.log.length;
  await assert.rejects(pipeline('ner', 'models/nothing-here'), /^Error: no folder models\/nothing-here in \/\S* \(read as a path, not a model id: the folder it would be in is here\)$/);
  assert.equal(hub.log.length, calls, 'a path beside a folder is not asked of the hub');
  await assert.rejects(pipeline('ner', 'org/nothing-here'), /^Error: no folder org\/nothing-here in \/\S*, and no model org\/nothing-here \(revision main\) on http:\/\/127\.0\.0\.1:\d+: config\.json not found/);
  // local_files_only: an id found nowhere locally is an error, and the remote host is not asked.
  const asked = hub.log.length;
  await assert.rejects(pipeline('text-classification', 'test/pii', { local_files_only: true }), /model test\/pii .*not found locally .*local_files_only is set/);
  assert.equal(hub.log.length, asked);
  // model_file_name (+ dtype suffix, in subfolder onnx) picks the weights file, as transformers.js.
  const before = gets(ETTIN, 'onnx/model_quantized.onnx').length;
  const named = await pipeline('fill-mask', ETTIN, { model_file_name: 'model', dtype: 'q8' });
  assert.equal(gets(ETTIN, 'onnx/model_quantized.onnx').length, before + 2); // the redirect and the CDN
  named.dispose();
  await assert.rejects(pipeline('fill-mask', ETTIN, { model_file_name: 'decoder', dtype: 'q8' }), /onnx\/decoder_quantized\.onnx/);
  // env.backends.onnx.wasm.numThreads, as transformers.js code sets it, is the default thread count.
  env.backends.onnx.wasm.numThreads = 1;
  try {
    const one = await pipeline('text-classification', TINY);
    assert.equal(one.info.threads, 1);
    one.dispose();
  } finally {
    delete env.backends.onnx.wasm.numThreads;
  }
});

test('an id loads from the remote host, weights through its redirect, with progress', async () => {
  const events = [];
  const clf = await pipeline('text-classification', 'test/tiny-seqcls', { onProgress: (e) => events.push(e) });
  assert.deepEqual(await clf(TEXT, { top_k: null }), await local(TEXT, { top_k: null }));
  const w = gets('test/tiny-seqcls', 'model.safetensors');
  assert.equal(w.length, 2, JSON.stringify(w));
  assert.match(w[0].path, /^\/test\/tiny-seqcls\/resolve\/main\/model\.safetensors$/);
  assert.match(w[1].path, /^\/cdn\//);
  assert.equal(gets('test/tiny-seqcls', 'onnx/model.onnx').length, 0, 'nothing past the weights used');
  assert.equal(gets('test/tiny-seqcls', 'tokenizer_config.json').length, 1, 'optional files are asked for');
  const files = new Set(events.filter((e) => e.stage === 'download').map((e) => e.file));
  assert.deepEqual([...files].sort(), ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
  const last = events.filter((e) => e.stage === 'download').at(-1);
  assert.equal(last.bytes, last.total);
  // The weights' size is known from their response's headers, before any of their bytes.
  const size = readFileSync(join(TINY, 'model.safetensors')).byteLength;
  const at = events.findIndex((e) => e.file === 'model.safetensors');
  const texts = events.slice(0, at).filter((e) => e.stage === 'download').at(-1);
  assert.equal(events[at].bytes, texts.bytes, 'no weight bytes yet');
  assert.equal(events[at].total, texts.total + size, 'the total counts the weights');
  clf.dispose();

  // A Hub URL is its id; a revision is a path segment.
  const byUrl = await pipeline('text-classification', 'https://huggingface.co/test/tiny-seqcls', { revision: 'v1.0' });
  assert.deepEqual(await byUrl(TEXT), await local(TEXT));
  assert.ok(hub.log.some((l) => l.path === '/test/tiny-seqcls/resolve/v1.0/config.json'));
  byUrl.dispose();
  await assert.rejects(pipeline('text-classification', 'test/tiny-seqcls', { revision: 'nope' }),
    /model test\/tiny-seqcls \(revision nope\) on http:\/\/127\.0\.0\.1:\d+: config\.json not found \(HTTP 404 for http:\S+\/resolve\/nope\/config\.json/);
});

test('sha256 and AbortSignal work for ids as for URLs', async () => {
  const sum = createHash('sha256').update(readFileSync(join(TINY, 'model.safetensors'))).digest('hex');
  const ok = await pipeline('text-classification', 'test/tiny-seqcls', { sha256: { 'model.safetensors': sum } });
  ok.dispose();
  await assert.rejects(pipeline('text-classification', 'test/tiny-seqcls', { sha256: { 'model.safetensors': '00'.repeat(32) } }), /model\.safetensors: sha256 mismatch/);
  const ac = new AbortController();
  const loading = pipeline('ner', 'test/pii', { signal: ac.signal });
  ac.abort();
  await assert.rejects(loading, (e) => e.name === 'AbortError');
});

test('dtype fetches only its file; a missing dtype names those present', async () => {
  const before = gets('test/pii', 'onnx/model_q4.onnx').length;
  const ner = await pipeline('ner', 'test/pii', { dtype: 'q4' });
  const c = golden('pii.json').cases[0];
  assertEntities('q4 by id', c.text, await ner(c.text, { aggregation_strategy: 'first' }), c.pipeline.first, INT_SCORE_TOL);
  ner.dispose();
  assert.equal(gets('test/pii', 'onnx/model_q4.onnx').length - before, 2);
  for (const f of ['model.safetensors', 'onnx/model.onnx', 'onnx/model_quantized.onnx']) assert.equal(gets('test/pii', f).length, 0, f);

  await assert.rejects(pipeline('ner', 'test/pii', { dtype: 'q8' }),
    /model test\/pii \(revision main\) on http:\/\/127\.0\.0\.1:\d+: has no q8 weights \(onnx\/model_quantized\.onnx\); it has: q4 \(onnx\/model_q4\.onnx\)/);
  assert.equal(gets('test/pii', 'onnx/model_quantized.onnx').length, 1, 'one try, then HEAD requests');
  await assert.rejects(pipeline('ner', 'test/pii', { dtype: 'int3' }), /unknown dtype `int3`; use one of fp32, fp16, q8, int8, uint8, q4, q4f16, bnb4/);
  await assert.rejects(pipeline('text-classification', 'test/tiny-seqcls', { dtype: 'q4' }), /has no q4 weights \(onnx\/model_q4\.onnx\); it has: fp32 \(safetensors\)/);
  // The same choice for folders and files.
  await assert.rejects(pipeline('ner', join(MODELS, 'pii'), { dtype: 'fp16' }), /pii: has no fp16 weights \(onnx\/model_fp16\.onnx\); it has: q4/);
  const fp32 = await pipeline('text-classification', TINY, { dtype: 'fp32' });
  assert.deepEqual(await fp32(TEXT), await local(TEXT));
  fp32.dispose();
  await assert.rejects(pipeline('ner', join(MODELS, 'pii'), { dtype: 7 }), /dtype must be a string/);
});

test('faults: clear errors naming the id and file; a server error is tried again', async () => {
  const id = (name) => new RegExp(`model ${name} \\(revision main\\) on http://127\\.0\\.0\\.1:\\d+`);
  await assert.rejects(pipeline('text-classification', 't/truncated'), /network error reading http:\S+\/t\/truncated\/resolve\/main\/model\.safetensors after \d+ of \d+ bytes/);
  assert.equal(gets('t/truncated', 'model.safetensors').filter((r) => r.path.startsWith('/cdn/')).length, 3, 'three attempts');
  await assert.rejects(pipeline('text-classification', 't/lying'), /network error reading .*model\.safetensors/);
  await assert.rejects(pipeline('text-classification', 't/html'), (e) => {
    assert.match(e.message, id('t/html'));
    assert.match(e.message, /the server answered config\.json with an HTML page \(content-type text\/html.*starts "<!doctype html>/);
    return true;
  });
  await assert.rejects(pipeline('text-classification', 't/no-tokenizer'), (e) => {
    assert.match(e.message, id('t/no-tokenizer'));
    assert.match(e.message, /: tokenizer\.json not found \(HTTP 404 for http:\S+\/t\/no-tokenizer\/resolve\/main\/tokenizer\.json/);
    return true;
  });
  await assert.rejects(pipeline('text-classification', 'nobody/nothing'), /model nobody\/nothing .*: config\.json not found \(HTTP 401/);
  const flaky = await pipeline('text-classification', 't/flaky');
  assert.deepEqual(await flaky(TEXT), await local(TEXT));
  assert.equal(gets('t/flaky', 'tokenizer.json').length, 2);
  flaky.dispose();
});

test('env: local copies first, remote models off', async () => {
  const saved = { ...env };
  try {
    env.localModelPath = join(ROOT, 'tests/tiny');
    const n = hub.log.length;
    const clf = await pipeline('text-classification', 'distilbert-seqcls');
    assert.deepEqual(await clf(TEXT), await local(TEXT));
    clf.dispose();
    // In Node a directory of the id's name wins (here relative to the working directory).
    const cwd = process.cwd();
    process.chdir(join(ROOT, 'tests'));
    try {
      const dir = await pipeline('text-classification', 'tiny/distilbert-seqcls');
      assert.deepEqual(await dir(TEXT), await local(TEXT));
      dir.dispose();
    } finally {
      process.chdir(cwd);
    }
    assert.equal(hub.log.length, n, 'no request to the remote host');
    env.allowRemoteModels = false;
    await assert.rejects(pipeline('text-classification', 'test/tiny-seqcls'), /model test\/tiny-seqcls .*not found locally .*env\.allowRemoteModels is false/);
    assert.equal(hub.log.length, n);
  } finally {
    Object.assign(env, saved);
  }
});

test("Node keeps ids on disk in the CLI's layout: a second process downloads nothing, local_files_only reads it, the CLI shares it", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'webert-disk-cache-'));
  const ID = 'test/disk-cache';
  const script = (extra) => `
    const { pipeline, env } = await import(${JSON.stringify(pathToFileURL(join(PKG, 'webert.js')).href)});
    env.remoteHost = ${JSON.stringify(hub.url)};
    env.cacheDir = ${JSON.stringify(dir)};
    const clf = await pipeline('text-classification', '${ID}'${extra});
    console.log(JSON.stringify(await clf(${JSON.stringify(TEXT)}, { top_k: null })));`;
  // (Not execFileSync: the mock hub answers from this process's event loop.)
  const run = promisify(execFile);
  const node = async (extra = '') => JSON.parse((await run(process.execPath, ['--input-type=module', '-e', script(extra)], { encoding: 'utf8' })).stdout);
  try {
    const want = await local(TEXT, { top_k: null });
    assert.deepEqual(await node(), want);
    const fetched = hub.requests(ID, 'model.safetensors').length;
    assert.ok(fetched > 0);
    const folder = join(dir, new URL(hub.url).host.replace(':', '_'), 'test', 'disk-cache', 'main');
    assert.ok(existsSync(join(folder, 'model.safetensors')) && existsSync(join(folder, '.webert-files.json')), `the CLI's layout under ${dir}`);
    const asked = hub.log.length;
    assert.deepEqual(await node(), want, 'second process');
    assert.deepEqual(await node(', { local_files_only: true }'), want, 'local_files_only');
    assert.equal(hub.log.length, asked, 'the second and third processes asked the host nothing');
    // The CLI reads the same folder with --offline (no network).
    const cli = ['target/debug/webert', 'target/release/webert'].map((p) => join(ROOT, p)).find(existsSync);
    assert.ok(cli, 'the CLI is built (cargo build)');
    const out = JSON.parse((await run(cli, ['classify', '--model', ID, '--remote-host', hub.url, '--cache-dir', dir, '--offline', '--backend', 'cpu', '--top-k', '10', '--text', TEXT], { encoding: 'utf8', env: { ...process.env, XDG_RUNTIME_DIR: tmpdir() } })).stdout);
    assert.deepEqual(out.map((l) => l.label).sort(), want.map((l) => l.label).sort());
    // clearCache(id) removes the id's folder; local_files_only then says it is not there.
    const { clearCache } = await import(join(PKG, 'webert.js'));
    env.cacheDir = dir;
    env.useFSCache = true;
    try {
      await clearCache(ID);
      assert.ok(!existsSync(folder));
      await assert.rejects(pipeline('text-classification', ID, { local_files_only: true }), /not found locally .*local_files_only is set/);
    } finally {
      env.useFSCache = false;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the dtype default: the model's transformers.js_config.dtype, else q8 in a browser and the most accurate in Node", async () => {
  // Node: fp32, as transformers.js in Node.
  const node = await pipeline('feature-extraction', 'test/q8-default');
  assert.ok(gets('test/q8-default', 'model.safetensors').length > 0);
  assert.equal(gets('test/q8-default', 'onnx/model_quantized.onnx').length, 0);
  const auto = await pipeline('feature-extraction', 'test/q8-default', { dtype: 'auto' });
  assert.deepEqual(auto.info.files, node.info.files, "dtype: 'auto' is the default choice");
  auto.dispose();
  node.dispose();
  // A folder whose config.json names a dtype (as onnx-community repos do) loads that one.
  const dir = mkdtempSync(join(tmpdir(), 'webert-jsconfig-'));
  try {
    cpSync(join(MODELS, 'minilm'), dir, { recursive: true });
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, 'transformers.js_config': { dtype: 'q8' } }));
    const own = await pipeline('feature-extraction', dir);
    assert.ok(own.info.files.includes('onnx/model_quantized.onnx'), own.info.files);
    own.dispose();
    // `dtype: 'auto'` (transformers.js's name for the default) chooses as no dtype does.
    const auto = await pipeline('feature-extraction', dir, { dtype: 'auto' });
    assert.deepEqual(auto.info.files, own.info.files);
    auto.dispose();
    const asked = await pipeline('feature-extraction', dir, { dtype: 'fp32' });
    assert.ok(asked.info.files.includes('model.safetensors') && !asked.info.files.some((f) => f.endsWith('.onnx')), 'a dtype given wins');
    asked.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
