#!/usr/bin/env node
// Where a CPU forward's time goes in Chromium: webert's per-op milliseconds (summed over the ops of
// one forward, median of --runs) for each thread count, in its Web Worker on a cross-origin
// isolated page, so the threads build runs when threads > 1.
//   node tests/bench/profile.mjs [--model minilm|pii] [--dtype q8] [--threads 1,2] [--tokens 128] [--runs 5]
// --dtype: which of the model folder's files (transformers.js's names; MiniLM has fp32 and q8).
// --device webgpu: per-kernel GPU milliseconds from timestamp queries instead (SwiftShader here;
// --gpu-weights packed|dequantized as the pipeline option).
import { serve } from '../../scripts/serve.mjs';
import { arg, launch, webertMounts } from './chromium.mjs';

const model = arg('model', 'minilm');
const dtype = arg('dtype', undefined);
const device = arg('device', 'cpu');
const gpuWeights = arg('gpu-weights', undefined);
const task = model === 'pii' ? 'token-classification' : 'feature-extraction';
const server = await serve({ mounts: webertMounts() });
const { context, close } = await launch({ webgpu: device === 'webgpu' });
try {
  // "1t": the threads build on one thread (its helpers idle)
  for (const spec of arg('threads', '1,2').split(',')) {
    const threads = parseInt(spec);
    const serialThreadsBuild = spec.endsWith('t');
    const page = await context.newPage();
    await page.goto(`${server.url}/index.html?profile`);
    const out = await page.evaluate(async ({ model, dtype, device, gpuWeights, task, threads, tokens, runs, serialThreadsBuild }) => {
      const { pipeline } = await import('/pkg/webert.js');
      const { testHooks } = await import('/pkg/testing.js');
      const p = await pipeline(task, `/models/${model}/`, { cache: false, device, dtype, gpuWeights, threads: serialThreadsBuild ? 2 : threads });
      if (serialThreadsBuild) await testHooks(p).threads(1);
      const text = Array.from({ length: tokens }, (_, i) => `w${i % 50}`).join(' ');
      const enc = [];
      for (let i = 0; i < runs + 1; i++) enc.push(await p.profile(text));
      await p.dispose();
      return { threads: p.info.threads, profiles: enc.slice(1) };
    }, { model, dtype, device, gpuWeights, task, threads, tokens: Number(arg('tokens', 128)) / 2, runs: Number(arg('runs', 5)), serialThreadsBuild });
    const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
    const kinds = Object.keys(out.profiles[0]);
    let total = 0;
    console.log(`\n${model}${dtype ? ` ${dtype}` : ''}, ${spec} thread(s) asked, ${out.threads} running:`);
    for (const k of kinds) {
      const ms = median(out.profiles.map((p) => p[k]));
      if (k.startsWith('pool:')) {
        console.log(`  ${String(ms).padStart(8)}     ${k}`);
        continue;
      }
      total += ms;
      console.log(`  ${ms.toFixed(2).padStart(8)} ms  ${k}`);
    }
    console.log(`  ${total.toFixed(2).padStart(8)} ms  total`);
    const totals = out.profiles.map((p) => Object.entries(p).filter(([k]) => !k.startsWith('pool:')).reduce((s, [, v]) => s + v, 0));
    console.log(`  each run: ${totals.map((t) => t.toFixed(1)).join(' ')}`);
    await page.close();
  }
} finally {
  await close();
  await server.close();
}
