#!/usr/bin/env node
// Loads with and without packed-model images (the `packedCache` option), against
// transformers.js's loads of the same files, in headless Chromium, one thread, CPU. Per model,
// each step in a fresh page of one browser context (the Cache API is kept between them, as
// between visits of a site): (1) the first visit, the files downloaded from the local server
// and cached, the image written after the load; (2) a later visit with `packedCache: false`
// (files from the Cache API, imported and packed); (3) a later visit with the image; then in
// that page, (4) a later load with a spare worker (`env.spareWorkerMs`). transformers.js loads
// the same file with its browser cache in visits (1) and (3), then in (3) once more (its later
// load: ONNX Runtime started, the file in its cache). In (2), a later load without the image
// too. Rounds alternate the models.
//   bash scripts/bench_browser.sh is the usual setup (models/bench/*); then
//   node tests/bench/packed_load.mjs [--rounds 3] [--models minilm,minilm-q8,pii,pii-q8]
// Every transformers.js dtype of both models (`--models dtypes`, or e.g. `minilm:fp16,pii:bnb4`)
// reads the files scripts/setup.sh builds (target/onnx-dtypes), which bench_browser.sh puts in
// models/bench/dtypes-{minilm,pii}/onnx/ under transformers.js's names.
import { join } from 'node:path';
import { serve } from '../../scripts/serve.mjs';
import { arg, here, launch, webertMounts } from './chromium.mjs';

const MODELS = {
  minilm: { task: 'feature-extraction', webert: '/models/minilm/', tjs: 'bench/tjs-minilm', dtype: 'fp32', label: 'MiniLM f32' },
  'minilm-q8': { task: 'feature-extraction', webert: '/models/minilm/', tjs: 'bench/tjs-minilm', dtype: 'q8', label: 'MiniLM q8' },
  pii: { task: 'token-classification', webert: '/models/pii/', tjs: 'pii', dtype: 'q4', label: 'PII q4' },
  'pii-q8': { task: 'token-classification', webert: '/models/bench/pii-q8/', tjs: 'bench/pii-q8', dtype: 'q8', label: 'PII q8' },
};
const DTYPES = ['fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4'];
for (const [model, task, label] of [['minilm', 'feature-extraction', 'MiniLM'], ['pii', 'token-classification', 'PII']]) {
  for (const dtype of DTYPES) {
    const folder = `bench/dtypes-${model}`;
    MODELS[`${model}:${dtype}`] = { task, webert: `/models/${folder}/`, tjs: folder, dtype, label: `${label} ${dtype}` };
  }
}
const dtypeKeys = Object.keys(MODELS).filter((k) => k.includes(':'));
const wanted = arg('models', 'minilm,minilm-q8,pii,pii-q8').split(',').flatMap((k) => (k === 'dtypes' ? dtypeKeys : [k]));
for (const k of wanted) if (!MODELS[k]) throw new Error(`unknown model ${k}; there are ${Object.keys(MODELS).join(', ')}`);
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
  if (step !== 'first') {
    const later = await load(step === 'no-image' ? { packedCache: false } : {});
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
    const tjsLoad = async () => {
      const t0 = performance.now();
      const t = await tjs(m.task, m.tjs, { dtype: m.dtype, device: 'wasm' });
      const ms = performance.now() - t0;
      await t('a short text');
      await t.dispose?.();
      return ms;
    };
    out.tjs = await tjsLoad();
    if (step === 'image') out.tjsLater = await tjsLoad();
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
        `later load in that page, image ${f(r.image.later.ms)} / no image ${f(r['no-image'].later.ms)} / transformers.js ${f(r.image.tjsLater)} ms`);
      console.log(`  phases: first ${JSON.stringify(r.first.webert.phases)}; no image ${JSON.stringify(r['no-image'].webert.phases)}; image ${JSON.stringify(r.image.webert.phases)}; later ${JSON.stringify(r.image.later.phases)}`);
    }
  }
  const median = (v) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)];
  console.log('\n| model | first visit webert / transformers.js | later visit, no image | later visit, image / transformers.js | image / first | later load in the page, image / no image / transformers.js |');
  console.log('|---|---|---|---|---|---|');
  for (const [label, rows] of Object.entries(table)) {
    const pick = (fn) => median(rows.map(fn));
    const [first, tFirst, none, img, tImg, later, laterNone, tLater] = [
      pick((r) => r.first.webert.ms), pick((r) => r.first.tjs), pick((r) => r['no-image'].webert.ms),
      pick((r) => r.image.webert.ms), pick((r) => r.image.tjs), pick((r) => r.image.later.ms),
      pick((r) => r['no-image'].later.ms), pick((r) => r.image.tjsLater),
    ];
    const f = (x) => x.toFixed(0);
    console.log(`| ${label} | ${f(first)} / ${f(tFirst)} | ${f(none)} | ${f(img)} / ${f(tImg)} | ${(img / first).toFixed(2)} | ${f(later)} / ${f(laterNone)} / ${f(tLater)} |`);
  }
} finally {
  await close();
  await server.close();
}
