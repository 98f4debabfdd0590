// The soak's short form (tests/bench/soak.mjs runs the long one): 500 calls in headless Chromium
// across three pipelines at once (NER on the PII model, feature extraction on MiniLM,
// classification on MiniLM + a seeded head), each in its Web Worker, with long texts and aborted
// model loads among them. After the warm-up (the first 100 calls) the WebAssembly memory of each
// model must not grow at all, and the JS heaps (after a GC) and Chromium's RSS only within
// tolerances that a leak of a few hundred bytes per call would exceed.
//   node --test tests/browser/soak.test.mjs      (after WEBERT_WEB_FEATURES=test-hooks scripts/build_web.sh)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requireModels } from './golden.mjs';
import { soak, formatRow } from '../bench/soak.mjs';

requireModels();
const MiB = 2 ** 20;

test('500 calls across three pipelines in workers: memory flat after the warm-up', { timeout: 900_000 }, async () => {
  const rows = await soak({ calls: 500, every: 100, longEvery: 20, abortEvery: 120, log: (r) => console.log(formatRow(r)) });
  const [warm, ...later] = rows;
  const last = rows.at(-1);
  assert.ok(last.aborted >= 2, `aborted loads: ${last.aborted}`);
  // The measurements themselves worked (a worker CDP could not reach would read 0).
  assert.equal(warm.workerHeaps.length, 3, 'one heap per pipeline worker');
  assert.ok(rows.every((r) => r.pageHeap > 0 && r.workerHeaps.every((h) => h > 0) && r.rss > 0), 'every figure was measured');
  for (const r of later) {
    assert.deepEqual(r.wasm, warm.wasm, `wasm memory at ${r.calls} calls`);
    assert.equal(r.workerHeaps.length, warm.workerHeaps.length, `workers at ${r.calls} calls (aborted loads leave none behind)`);
  }
  // 400 calls after the warm-up: a leak of 1 kB per call would add 0.4 MB to a heap.
  assert.ok(last.pageHeap - warm.pageHeap < 2 * MiB, `page heap ${warm.pageHeap} → ${last.pageHeap}`);
  last.workerHeaps.forEach((h, i) => assert.ok(h - warm.workerHeaps[i] < 2 * MiB, `worker heap ${i}: ${warm.workerHeaps[i]} → ${h}`));
  assert.ok(last.rss - warm.rss < 0.1 * warm.rss, `RSS ${(warm.rss / MiB).toFixed(0)} → ${(last.rss / MiB).toFixed(0)} MiB`);
});
