#!/usr/bin/env node
// webert vs transformers.js in the same headless Chromium (Debian's /usr/bin/chromium driven by
// playwright-core, launched as tests/browser/browser.mjs does). Serves on 127.0.0.1 only, with the
// COOP/COEP headers of scripts/serve.mjs (so 2 ORT threads are possible):
//   /          tests/bench/page/  (the benchmark page)
//   /pkg/      www/pkg/           (webert, from scripts/build_web.sh)
//   /tjs/      @huggingface/transformers/dist/   /ort/  onnxruntime-web/dist/  (no CDN)
//   /models/   models/            (models/pii, models/minilm, models/bench/tjs-minilm)
// Opens the page once per thread count (ORT's thread count is fixed per page) and prints the table.
//   node tests/bench/run.mjs [--runs 20] [--warmup 3] [--warmup-ms 2000] [--threads 1,2] [--webgpu [--gpu-runs 3] [--gpu-weights packed|dequantized]] [--no-worker] [--order alternate|blocks] [--models minilm,pii] [--tokens 15,128] [--prefetch on|off] [--serve]
// --prefetch: webert's f32 GEMMs prefetch the weights ahead or not, set by a test hook (its
// default: timed in its first forwards); the agreement lines say what each row ran with.
// --no-worker: webert on the page's thread (its browser default is a Web Worker).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from '../../scripts/serve.mjs';
import { arg, flag, here, launch, root, webertMounts } from './chromium.mjs';

const runs = Number(arg('runs', 20));
const warmup = Number(arg('warmup', 3));
const warmupMs = Number(arg('warmup-ms', 2000));
// `--threads none` with --webgpu: the WebGPU rows only
const threadList = arg('threads', '1,2') === 'none' ? [] : arg('threads', '1,2').split(',').map(Number);

const mounts = {
  ...webertMounts(),
  '/tjs/': join(here, 'node_modules/@huggingface/transformers/dist'),
  '/ort/': join(here, 'node_modules/onnxruntime-web/dist'),
};
const server = await serve({ mounts, port: Number(arg('port', flag('serve') ? 8081 : 0)) });
if (flag('serve')) {
  console.log(`benchmark page on ${server.url}?threads=1  (Ctrl-C stops)`);
} else {
  try {
    await main();
  } finally {
    await server.close();
  }
}

async function main() {
  const { context, close } = await launch();
  const results = [];
  try {
    const configs = threadList.map((threads) => ({ threads, device: 'wasm' }));
    if (flag('webgpu')) configs.push({ threads: 1, device: 'webgpu' });
    for (const { threads, device } of configs) {
      const page = await context.newPage();
      page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') console.error(`  [${m.type()}] ${m.text()}`); });
      page.on('pageerror', (e) => console.error(`  [pageerror] ${e.message}`));
      page.on('requestfailed', (r) => console.error(`  [requestfailed] ${r.url()}`));
      // Anything not on 127.0.0.1 is a bug (the point is: all local).
      await page.route((url) => url.hostname !== '127.0.0.1', (r) => {
        console.error(`  [blocked non-local request] ${r.request().url()}`);
        return r.abort();
      });
      // Headless WebGPU is SwiftShader here (seconds per call): fewer runs for those rows.
      const [n, w, wms] = device === 'webgpu' ? [Number(arg('gpu-runs', 3)), 1, 0] : [runs, warmup, warmupMs];
      const url = `${server.url}?threads=${threads}&runs=${n}&warmup=${w}&warmupMs=${wms}&device=${device}` +
        (flag('no-worker') ? '&worker=0' : '') + (arg('order') ? `&order=${arg('order')}` : '') +
        (arg('models') ? `&models=${arg('models')}` : '') + (arg('tokens') ? `&tokens=${arg('tokens')}` : '') +
        (arg('gpu-weights') ? `&gpuWeights=${arg('gpu-weights')}` : '') + (arg('prefetch') ? `&prefetch=${arg('prefetch')}` : '');
      console.error(`> ${url}`);
      await page.goto(url);
      const res = await page.evaluate(() => window.__bench);
      await page.close();
      if (res.error) throw new Error(`page failed: ${res.error}`);
      if (threads > 1 && !res.crossOriginIsolated) {
        console.error(`page not cross-origin isolated: ${threads} threads not possible, row dropped`);
        continue;
      }
      results.push(res);
    }
  } finally {
    await close();
  }
  print(results);
  const outDir = join(root, 'target/bench-browser');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'results.json'), JSON.stringify(results, null, 1));
  console.log(`\n(raw per-run times in ${join(outDir, 'results.json')})`);
}

function print(results) {
  const first = results[0];
  if (!first) return;
  console.log(`\n${first.userAgent}\ncrossOriginIsolated=${first.crossOriginIsolated} ` +
    `hardwareConcurrency=${first.hardwareConcurrency}; median of ${first.runs} runs after ${first.warmup} warm-up calls (and at least ${first.warmupMs ?? 0} ms of them); ` +
    (first.order === 'blocks' ? 'each engine\'s calls back to back (order=blocks); ' : 'webert and transformers.js calls alternate; ') +
    'wall time of one pipeline call on one text (tokenize + forward + post-process) on the page\'s main thread' +
    (first.worker ? ' (webert computes in its Web Worker)' : ' (webert in that thread too: --no-worker)'));
  const head = ['model', 'device', 'tokens', 'threads', 'webert ms', 'transformers.js ms', 'ratio tjs/webert', 'min webert', 'min tjs', 'webert engine ms', 'agree'];
  const rows = [];
  for (const r of results) for (const row of r.rows) {
    rows.push([row.model, row.device, String(row.tokens),
      row.webert_threads != null && row.webert_threads !== row.threads ? `${row.threads} (webert: ${row.webert_threads})` : String(row.threads),
      row.webert_ms == null ? 'n/a' : row.webert_ms.toFixed(1), row.tjs_ms.toFixed(1),
      row.ratio == null ? 'n/a' : `${row.ratio.toFixed(2)}x`,
      row.webert_runs ? Math.min(...row.webert_runs).toFixed(1) : 'n/a', Math.min(...row.tjs_runs).toFixed(1),
      row.webert_engine_ms == null ? 'n/a' : row.webert_engine_ms.toFixed(1), row.agree ? 'yes' : 'NO']);
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join(' | ');
  console.log(line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of rows) console.log(line(r));
  for (const r of results) if (r.adapter) console.log(`WebGPU adapter (${r.device} rows): ${r.adapter}`);
  // Loads in page order: the first model's include each engine's wasm start; a later webert load
  // takes the worker the previous model's pipeline left (env.spareWorkerMs), "new worker" when not.
  console.log('\nloads (ms; webert phases from info.loadPhases):');
  for (const r of results) for (const l of r.loads ?? []) {
    const p = l.phases ?? {};
    const phases = Object.entries(p).filter(([k]) => k !== 'build').map(([k, v]) => `${k} ${v}`).join(', ');
    const build = p.build ? ` (build: ${Object.entries(p.build).map(([k, v]) => `${k} ${v}`).join(', ')})` : '';
    const worker = l.worker_reused ? 'reused worker' : 'new worker';
    console.log(`  ${l.model}, ${r.threads}T (${worker}): webert ${l.webert_ms.toFixed(0)}, transformers.js ${l.tjs_ms.toFixed(0)}, ratio ${(l.tjs_ms / l.webert_ms).toFixed(2)}x; ${phases}${build}`);
  }
  console.log('\nagreement:');
  for (const r of results) for (const row of r.rows) console.log(`  ${row.model} ${row.tokens} tok, ${row.device} ${row.threads}T: ${row.detail}`);
  console.log('\nthreads: both use that many (webert\'s threads build, helpers in Web Workers sharing its memory); "(webert: n)" when it ran on fewer.' +
    '\nratio (of medians) > 1: webert is that many times faster. min: fastest single run (less sensitive to other load).' +
    '\nwebert engine ms: median time inside the engine (tokenize, forward, post-process; in its Worker by default).');
}
