#!/usr/bin/env node
// What one page <-> Worker round trip costs in Chromium after 120 ms of main-thread work or idle
// (as between the bench's alternating calls), median of 25, five ways: postMessage both ways;
// postMessage plus an Atomics "doorbell" that wakes a worker parked in Atomics.wait; postMessage
// there and Atomics back (the page awaits Atomics.waitAsync); Atomics there (the worker parked)
// and postMessage back; Atomics both ways. No webert code: it prices the transport alone.
//   node tests/bench/hop.mjs
import { serve } from '../../scripts/serve.mjs';
import { launch, webertMounts } from './chromium.mjs';

const server = await serve({ mounts: webertMounts() });
const { context, close } = await launch({ webgpu: false });
try {
  const page = await context.newPage();
  await page.goto(`${server.url}/index.html?profile`);
  const out = await page.evaluate(async () => {
    const src = `
      let sab, received = 0, parking = false;
      // Parked in Atomics.wait until the page has sent more than was received; every 50 ms back
      // to the event loop (timers and fetches must still run).
      function park() {
        while (Atomics.load(sab, 0) === received) {
          if (Atomics.wait(sab, 0, received, 50) === 'timed-out') return void setTimeout(park, 0);
        }
      }
      onmessage = (e) => {
        const { mode } = e.data;
        if (mode === 'plain') {
          sab = new Int32Array(e.data.sab);
          return void postMessage('ready');
        }
        if (mode === 'atomics' || mode === 'atomics-there') {
          sab = new Int32Array(e.data.sab);
          postMessage('ready');
          // Parked until the page stores 1 in sab[0]; answers by Atomics (sab[1]) or a message.
          for (;;) {
            Atomics.wait(sab, 0, 0);
            Atomics.store(sab, 0, 0);
            if (mode === 'atomics-there') return void (postMessage(0), setTimeout(() => onmessage(e), 0));
            Atomics.store(sab, 1, 1);
            Atomics.notify(sab, 1);
          }
        }
        if (mode === 'doorbell') {
          sab = new Int32Array(e.data.sab);
          parking = true;
          postMessage('ready');
          return park();
        }
        if (e.data === 'reply') {
          Atomics.add(sab, 1, 1);
          Atomics.notify(sab, 1);
          return;
        }
        postMessage(e.data);
        if (parking) received++, park();
      };`;
    const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
    const busy = (ms) => {
      const t = performance.now();
      let x = 0;
      while (performance.now() - t < ms) x += Math.sqrt(x + 1);
      return x;
    };
    const med = (x) => [...x].sort((a, b) => a - b)[x.length >> 1].toFixed(2);
    const start = async (mode) => {
      const w = new Worker(url);
      const a = new Int32Array(new SharedArrayBuffer(8));
      await new Promise((r) => {
        w.onmessage = r;
        w.postMessage({ mode, sab: a.buffer });
      });
      return { w, a };
    };
    const ways = {
      postMessage: async ({ w }) => new Promise((r) => { w.onmessage = r; w.postMessage(0); }),
      doorbell: async ({ w, a }) =>
        new Promise((r) => {
          w.onmessage = r;
          w.postMessage(0);
          Atomics.add(a, 0, 1);
          Atomics.notify(a, 0);
        }),
      'postMessage + Atomics reply': async ({ w, a }) => {
        const seen = Atomics.load(a, 1);
        w.postMessage('reply');
        const r = Atomics.waitAsync(a, 1, seen);
        if (r.async) await r.value;
      },
      'Atomics there, postMessage back': async ({ w, a }) =>
        new Promise((r) => {
          w.onmessage = r;
          Atomics.store(a, 0, 1);
          Atomics.notify(a, 0);
        }),
      atomics: async ({ a }) => {
        Atomics.store(a, 1, 0);
        Atomics.store(a, 0, 1);
        Atomics.notify(a, 0);
        const r = Atomics.waitAsync(a, 1, 0);
        if (r.async) await r.value;
      },
    };
    const lines = [`crossOriginIsolated=${crossOriginIsolated}`];
    for (const gapKind of ['busy', 'idle']) {
      const gap = () => (gapKind === 'busy' ? busy(120) : new Promise((r) => setTimeout(r, 120)));
      const row = [];
      for (const [name, trip] of Object.entries(ways)) {
        const mode = { doorbell: 'doorbell', atomics: 'atomics', 'Atomics there, postMessage back': 'atomics-there' }[name];
        const worker = await start(mode ?? 'plain');
        const ms = [];
        for (let i = 0; i < 25; i++) {
          await gap();
          const t0 = performance.now();
          await trip(worker);
          ms.push(performance.now() - t0);
        }
        worker.w.terminate();
        row.push(`${name} ${med(ms)} ms`);
      }
      lines.push(`after 120 ms ${gapKind}: ${row.join(', ')}`);
    }
    return lines.join('\n');
  });
  console.log(out);
} finally {
  await close();
  await server.close();
}
