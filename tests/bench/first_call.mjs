#!/usr/bin/env node
// How much slower a pipeline's first calls are than later ones in Chromium (V8 optimizes
// WebAssembly only once it has run a while; the worker warms the model up in idle time after
// loading): load ms, then wall / engine ms of 8 calls on a ~75-token text, a fresh page per
// model and round, the first call --idle ms after the load (0: at once).
//   node tests/bench/first_call.mjs [--idle 0,1000] [--rounds 2]
import { serve } from '../../scripts/serve.mjs';
import { arg, launch, webertMounts } from './chromium.mjs';

const server = await serve({ mounts: webertMounts() });
const { context, close } = await launch({ webgpu: false });
try {
  for (let round = 0; round < Number(arg('rounds', 2)); round++) {
    for (const idle of arg('idle', '0,1000').split(',').map(Number)) {
      for (const model of ['pii', 'minilm']) {
        const page = await context.newPage();
        await page.goto(`${server.url}/index.html?profile`);
        const line = await page.evaluate(async ([model, idle]) => {
          const { pipeline } = await import('/pkg/webert.js');
          const t0 = performance.now();
          const p = await pipeline(model === 'pii' ? 'ner' : 'feature-extraction', `/models/${model}/`, { cache: false, device: 'cpu' });
          const load = performance.now() - t0;
          await new Promise((r) => setTimeout(r, idle));
          const text = 'Hi, my name is John Smith and I live at 42 Elm Street, Springfield. You can email me at john.smith@example.com or call +1 415 555 0132 after six. '.repeat(2);
          const calls = [];
          for (let i = 0; i < 8; i++) {
            const t = performance.now();
            const r = await p(text);
            calls.push([performance.now() - t, r.ms]);
          }
          p.dispose();
          const later = calls.slice(3).map(([w]) => w).sort((a, b) => a - b)[2];
          const each = calls.map(([w, e]) => `${w.toFixed(1)}/${e.toFixed(1)}`).join(' ');
          return `${model.padEnd(6)} idle ${String(idle).padStart(4)} ms: load ${load.toFixed(0)} ms; first call ${(calls[0][0] / later).toFixed(2)}x the median of calls 4–8; wall/engine ms: ${each}`;
        }, [model, idle]);
        console.log(line);
        await page.close();
      }
    }
  }
} finally {
  await close();
  await server.close();
}
