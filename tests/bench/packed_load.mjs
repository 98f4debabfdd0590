#!/usr/bin/env node
// Loads with and without packed-model images (the `packedCache` option), against
// transformers.js's loads of the same files, in headless Chromium, one thread, CPU. Per model,
// each step in a fresh page of one browser context (the Cache API is kept between them, as
// between visits of a site): (1) the first visit, the files downloaded from the local server
// and cached, the image written after the load; (2) a later visit with `packedCache: false`
// (files from the Cache API, imported and packed); (3) a later visit with the image; then in
// that page, (4) a later load with a spare worker (`env.spareWorkerMs`). transformers.js loads
// the same file with its browser cache in visits (1) and (3). Rounds alternate the models.
//   bash scripts/bench_browser.sh is the usual setup (models/bench/*); then
//   node tests/bench/packed_load.mjs [--rounds 3] [--models minilm,minilm-q8,pii,pii-q8]
import { join } from 'node:path';
import { serve } from '../../scripts/serve.mjs';
import { arg, here, launch, webertMounts } from './chromium.mjs';

const MODELS = {
  minilm: { task: 'feature-extraction', webert: '/models/minilm/', tjs: 'bench/tjs-minilm', dtype: 'fp32', label: 'MiniLM f32' },
  'minilm-q8': { task: 'feature-extraction', webert: '/models/minilm/', tjs: 'bench/tjs-minilm', dtype: 'q8', label: 'MiniLM q8' },
  pii: { task: 'token-classification', webert: '/models/pii/', tjs: 'pii', dtype: 'q4', label: 'PII q4' },
  'pii-q8': { task: 'token-classification', webert: '/models/bench/pii-q8/', tjs: 'bench/pii-q8', dtype: 'q8', label: 'PII q8' },
};
const wanted = arg('models', 'minilm,minilm-q8,pii,pii-q8').split(',');
const rounds = Number(arg('rounds', 3));

const mounts = {
  ...webertMounts(),
  '/tjs/': join(here, 'node_modules/@huggingface/transformers/dist'),
  '/ort/': join(here, 'node_modules/onnxruntime-web/dist'),
};
const server = await serve({ mounts });
const { context, close } = await launch({ webgpu: false });

/** In the page: one visit's loads of `m` (webert, then transformers.js when `tjs`). */
async function visit({ m, step }) {
  const { pipeline, clearCache, env } = await import('/pkg/webert.js');
  const images = async () => (await (await caches.open('webert-packed-v1')).keys()).filter((r) => r.url.endsWith('.bin')).length;
  if (step === 'first') {
    await clearCache(m.webert);
    await caches.delete('transformers-cache');
  }
  const before = await images();
  const load = async (options) => {
    const t0 = performance.now();
    const p = await pipeline(m.task, m.webert, { device: 'cpu', threads: 1, dtype: m.dtype, ...options });
    const ms = performance.now() - t0;
    const { loadPhases: ph, packedImage } = p.info;
    await p('a short text');
    return { p, ms, packedImage: packedImage ?? null, phases: { files: ph.files_ms, build: ph.build_ms, image: ph.build.image_ms, parse: ph.build.parse_ms, pack: ph.build.pack_ms, worker: ph.worker_ms } };
  };
  const out = {};
  env.spareWorkerMs = 5000;
  const w = await load(step === 'no-image' ? { packedCache: false } : {});
  out.webert = { ms: w.ms, packedImage: w.packedImage, phases: w.phases };
  if (step === 'first') {
    for (let i = 0; i < 200 && (await images()) === before; i++) await new Promise((ok) => setTimeout(ok, 50));
  }
  w.p.dispose();
  if (step === 'image') {
    const later = await load({});
    out.later = { ms: later.ms, packedImage: later.packedImage, phases: later.phases };
    later.p.dispose();
  }
  if (step !== 'no-image') {
    const { env: tenv, pipeline: tjs } = await import('/tjs/transformers.js');
    Object.assign(tenv, { allowRemoteModels: false, allowLocalModels: true, localModelPath: '/models/', useBrowserCache: true });
    tenv.backends.onnx.wasm.wasmPaths = {
      mjs: new URL('/ort/ort-wasm-simd-threaded.asyncify.mjs', location.href).href,
      wasm: new URL('/ort/ort-wasm-simd-threaded.asyncify.wasm', location.href).href,
    };
    tenv.backends.onnx.wasm.numThreads = 1;
    const t0 = performance.now();
    const t = await tjs(m.task, m.tjs, { dtype: m.dtype, device: 'wasm' });
    out.tjs = performance.now() - t0;
    await t.dispose?.();
  }
  return out;
}

const table = {};
try {
  for (let round = 0; round < rounds; round++) {
    for (const key of wanted) {
      const m = MODELS[key];
      const row = (table[m.label] ??= []);
      const r = {};
      for (const step of ['first', 'no-image', 'image']) {
        const page = await context.newPage();
        await page.goto(`${server.url}/index.html?profile`);
        r[step] = await page.evaluate(visit, { m, step });
        await page.close();
      }
      row.push(r);
      const f = (x) => x.toFixed(0);
      console.log(`${m.label} round ${round + 1}: first visit webert ${f(r.first.webert.ms)} / transformers.js ${f(r.first.tjs)} ms; ` +
        `later visit, no image ${f(r['no-image'].webert.ms)} ms; with the image ${f(r.image.webert.ms)} (${r.image.webert.packedImage}) / transformers.js ${f(r.image.tjs)} ms; ` +
        `later load in that page, image ${f(r.image.later.ms)} ms`);
      console.log(`  phases: first ${JSON.stringify(r.first.webert.phases)}; no image ${JSON.stringify(r['no-image'].webert.phases)}; image ${JSON.stringify(r.image.webert.phases)}; later ${JSON.stringify(r.image.later.phases)}`);
    }
  }
  const median = (v) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)];
  console.log('\n| model | first visit webert / transformers.js | later visit, no image | later visit, image / transformers.js | image / first | later load, image |');
  console.log('|---|---|---|---|---|---|');
  for (const [label, rows] of Object.entries(table)) {
    const pick = (fn) => median(rows.map(fn));
    const [first, tFirst, none, img, tImg, later] = [
      pick((r) => r.first.webert.ms), pick((r) => r.first.tjs), pick((r) => r['no-image'].webert.ms),
      pick((r) => r.image.webert.ms), pick((r) => r.image.tjs), pick((r) => r.image.later.ms),
    ];
    console.log(`| ${label} | ${first.toFixed(0)} / ${tFirst.toFixed(0)} | ${none.toFixed(0)} | ${img.toFixed(0)} / ${tImg.toFixed(0)} | ${(img / first).toFixed(2)} | ${later.toFixed(0)} |`);
  }
} finally {
  await close();
  await server.close();
}
