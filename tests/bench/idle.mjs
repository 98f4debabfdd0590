#!/usr/bin/env node
// CPU time Chromium burns while webert sits idle after some calls (threads build, cross-origin
// isolated page): helpers must sleep between calls, not spin.
//   node tests/bench/idle.mjs [--threads 2] [--idle-ms 3000]
import { readFileSync, readdirSync } from 'node:fs';
import { serve } from '../../scripts/serve.mjs';
import { arg, launch, webertMounts } from './chromium.mjs';

const threads = Number(arg('threads', 2));
const idleMs = Number(arg('idle-ms', 3000));
// Clock ticks (user + system) of every Chromium process.
const chromiumTicks = () => {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!/\((chromium|chrome)[^)]*\)/.test(stat)) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch { /* gone */ }
  }
  return ticks;
};
const server = await serve({ mounts: webertMounts() });
const { context, close } = await launch({ webgpu: false });
try {
  const page = await context.newPage();
  await page.goto(`${server.url}/index.html?profile`);
  const running = await page.evaluate(async (threads) => {
    const { pipeline } = await import('/pkg/webert.js');
    const p = await pipeline('feature-extraction', '/models/minilm/', { cache: false, device: 'cpu', threads });
    for (let i = 0; i < 5; i++) await p('a few words to embed, again and again');
    window.__p = p;
    return p.info.threads;
  }, threads);
  const measure = async () => {
    const t0 = chromiumTicks();
    await new Promise((r) => setTimeout(r, idleMs));
    return (chromiumTicks() - t0) / 100 / (idleMs / 1000);
  };
  await new Promise((r) => setTimeout(r, 2000)); // let the page settle after loading
  const idle = await measure();
  await page.evaluate(() => window.__p('one more call'));
  const after = await measure();
  console.log(`${running} thread(s): Chromium used ${(100 * idle).toFixed(1)}% of a core while idle (2 s after loading) ` +
    `and ${(100 * after).toFixed(1)}% right after one more call, over ${idleMs} ms each`);
} finally {
  await close();
  await server.close();
}
