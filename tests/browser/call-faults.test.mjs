// Faults during calls, in Node (the model in the calling thread): a trap inside a call (a panic
// in its forward pass, from a test hook) fails that call only, and the calls queued behind it and
// after it answer as before; a call after dispose() is a clear error while pipelines sharing the
// model go on; load/dispose cycles leave the WebAssembly memory where one cycle left it.
//   node --test tests/browser/call-faults.test.mjs      (after WEBERT_WEB_FEATURES=test-hooks scripts/build_web.sh)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { MODELS, PKG, golden, assertEntities, INT_SCORE_TOL, requireModels } from './golden.mjs';

const { pipeline } = await import(join(PKG, 'webert.js'));
const { testHooks } = await import(join(PKG, 'testing.js'));
requireModels();
const PII = join(MODELS, 'pii');
const cases = golden('pii.json').cases;

test('a trap inside a call fails that call only; queued and later calls answer', async () => {
  const ner = await pipeline('ner', PII);
  const o = { aggregation_strategy: 'first' };
  await testHooks(ner).trapInNextCall();
  const [trapped, ...rest] = await Promise.allSettled(cases.slice(0, 4).map((c) => ner(c.text, o)));
  assert.equal(trapped.status, 'rejected');
  assert.match(trapped.reason.message, /internal error \(.*a panic inside a forward pass.*\); the WebAssembly instance was restarted/s);
  rest.forEach((r, i) => {
    assert.equal(r.status, 'fulfilled', `queued call ${i + 1}: ${r.reason?.message}`);
    assertEntities(`queued call ${i + 1}`, cases[i + 1].text, r.value, cases[i + 1].pipeline.first, INT_SCORE_TOL);
  });
  assertEntities('after the trap', cases[0].text, await ner(cases[0].text, o), cases[0].pipeline.first, INT_SCORE_TOL);
  // Twice in a row: the restarted instance can trap and recover again.
  await testHooks(ner).trapInNextCall();
  await assert.rejects(ner(cases[0].text, o), /instance was restarted/);
  assertEntities('after a second trap', cases[0].text, await ner(cases[0].text, o), cases[0].pipeline.first, INT_SCORE_TOL);
  ner.dispose();
});

test('a call after dispose() is a clear error; a pipeline sharing the model goes on', async () => {
  const a = await pipeline('ner', PII);
  const b = await pipeline('ner', PII);
  a.dispose();
  a.dispose(); // twice is harmless
  await assert.rejects(a(cases[0].text), /this token-classification pipeline was disposed; create a new one with pipeline\(\)/);
  await assert.rejects(a.profile('x'), /was disposed/);
  assertEntities('the other pipeline', cases[0].text, await b(cases[0].text, { aggregation_strategy: 'first' }), cases[0].pipeline.first, INT_SCORE_TOL);
  b.dispose();
  await assert.rejects(b(cases[0].text), /was disposed/);
});

test('load and dispose again and again: the WebAssembly memory stays where the first cycle left it', async () => {
  const sizes = [];
  for (let i = 0; i < 6; i++) {
    const fx = await pipeline('feature-extraction', join(MODELS, 'minilm'));
    await fx(['a sentence to embed', 'another one '.repeat(40)], { pooling: 'mean', normalize: true });
    sizes.push(await testHooks(fx).wasmMemory());
    fx.dispose();
  }
  // The instance's memory cannot shrink; freed model memory must be reused, not added to.
  assert.ok(sizes.every((s) => s === sizes[1]), `wasm memory per cycle (bytes): ${sizes.join(', ')}`);
});
