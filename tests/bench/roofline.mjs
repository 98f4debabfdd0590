#!/usr/bin/env node
// How near this machine's limits webert's CPU forwards run in Chromium: `pipe.roofline` per
// token count (the median of --runs forwards, the weight bytes they read and their share of
// the single-thread read bandwidth, the tile's multiply-add peak and the forward's floor), in
// the package's Worker, one thread. After the model's first short calls have timed the weight
// prefetch choice; `--prefetch on,off` measures each setting instead (test-hooks build).
//   node tests/bench/roofline.mjs [--model minilm] [--dtypes fp32,q8] [--tokens 8,15,32,64,128] [--runs 20] [--prefetch chosen|on|off|on,off]
import { serve } from '../../scripts/serve.mjs';
import { arg, launch, webertMounts } from './chromium.mjs';

const model = arg('model', 'minilm');
const task = model === 'pii' ? 'token-classification' : 'feature-extraction';
const server = await serve({ mounts: webertMounts() });
const { context, close } = await launch({ webgpu: false });
try {
  for (const dtype of arg('dtypes', 'fp32,q8').split(',')) {
    for (const prefetch of arg('prefetch', 'chosen').split(',')) {
      const page = await context.newPage();
      await page.goto(`${server.url}/index.html?roofline`);
      const out = await page.evaluate(async ({ model, dtype, task, tokens, runs, prefetch }) => {
        const { pipeline } = await import('/pkg/webert.js');
        const { testHooks } = await import('/pkg/testing.js');
        const p = await pipeline(task, `/models/${model}/`, { cache: false, dtype, threads: 1 });
        const hooks = testHooks(p);
        // Words of two tokens each ("w1" is "w", "##1"), plus [CLS] and [SEP].
        const text = (n) => Array.from({ length: Math.max(1, (n - 2) >> 1) }, (_, i) => `w${i % 50}`).join(' ');
        for (let i = 0; i < 60 && /being timed/.test(await hooks.weightPrefetch()); i++) await p(text(15));
        if (prefetch !== 'chosen') await hooks.setWeightPrefetch(prefetch === 'on');
        const rows = [];
        for (const n of tokens) rows.push(await p.roofline(text(n), { runs }));
        const chosen = await hooks.weightPrefetch();
        await p.dispose();
        return { rows, chosen };
      }, { model, dtype, task, tokens: arg('tokens', '8,15,32,64,128').split(',').map(Number), runs: Number(arg('runs', 20)), prefetch });
      console.log(`\n${model} ${dtype}, 1 thread, weight prefetch ${out.chosen}:`);
      console.log('tokens | ms | weight MB | GB/s | of read bandwidth (GB/s) | peak GMAC/s | floor ms | of floor');
      for (const r of out.rows) {
        const f = (x, d = 2) => (x == null ? '-' : x.toFixed(d));
        console.log(`${r.tokens} | ${f(r.forward_ms)} | ${f(r.weight_bytes / 1e6, 1)} | ${f(r.weight_gb_per_s)} | ${f(r.of_read_bandwidth)} (${f(r.read_gb_per_s, 1)}) | ${f(r.peak_gmac_per_s, 1)} | ${f(r.floor_ms)} | ${f(r.of_floor)}`);
      }
      await page.close();
    }
  }
} finally {
  await close();
  await server.close();
}
