#!/usr/bin/env node
// webert alone, MiniLM feature extraction on a short text, 1 and 2 threads: median engine and
// wall ms of 30 calls, each after --gap ms idle (0: back to back). Calls that follow an idle gap
// find cold caches, a slower core and sleeping helpers, as calls from a page usually do.
//   node tests/bench/gaps.mjs [--gap 50] [--words 12]
import { serve } from '../../scripts/serve.mjs';
import { arg, launch, webertMounts } from './chromium.mjs';

const server = await serve({ mounts: webertMounts() });
const { context, close } = await launch({ webgpu: false });
try {
  for (const threads of [1, 2]) {
    const page = await context.newPage();
    await page.goto(`${server.url}/index.html?profile`);
    const out = await page.evaluate(async ({ threads, words, gap }) => {
      const { pipeline } = await import('/pkg/webert.js');
      const p = await pipeline('feature-extraction', '/models/minilm/', { cache: false, device: 'cpu', threads });
      const text = 'Hi, my name is John Smith and I live at 42 Elm Street, Springfield. You can email me at john.smith@example.com or call'.split(' ').slice(0, words).join(' ');
      const ms = [], wall = [];
      for (let i = 0; i < 30; i++) {
        if (gap) await new Promise((r) => setTimeout(r, gap));
        const t0 = performance.now();
        const r = await p(text, { pooling: 'mean' });
        wall.push(performance.now() - t0); ms.push(r.ms);
      }
      const med = (x) => [...x].sort((a, b) => a - b)[x.length >> 1];
      return `threads ${p.info.threads}: engine ${med(ms).toFixed(1)} wall ${med(wall).toFixed(1)} | ${ms.map((x) => x.toFixed(0)).join(' ')}`;
    }, { threads, words: Number(arg('words', 12)), gap: Number(arg('gap', 0)) });
    console.log(out);
    await page.close();
  }
} finally {
  await close();
  await server.close();
}
