// Teaching a classifier with the built npm package in Node: train() on an encoder pipeline and on
// a model folder, against scikit-learn (tests/golden/train.json), exportHead() and the `head`
// option (bytes, a URL, a path) giving the same answers, and the errors a user can cause.
//   node --test tests/browser/train.test.mjs      (after scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { MODELS, PKG, golden, requireModels } from './golden.mjs';
import { serve } from '../../scripts/serve.mjs';

const { pipeline, train } = await import(join(PKG, 'webert.js'));
const { testHooks } = await import(join(PKG, 'testing.js'));
requireModels();

const G = golden('train.json');
const TOL = 2e-3;
let minilm;
let server;

before(async () => {
  minilm = await pipeline('feature-extraction', join(MODELS, 'minilm'));
});
after(() => server?.close());

/** Per held-out text, the probabilities in the order of `classes`. */
async function probabilities(clf, texts, classes) {
  const got = await clf(texts, { top_k: null });
  return got.map((ranked) => classes.map((c) => ranked.find((x) => x.label === c).score));
}

function assertLikeSklearn(what, probs, c) {
  probs.forEach((p, i) => {
    const best = c.classes[p.indexOf(Math.max(...p))];
    assert.equal(best, c.held_out_labels[i], `${what}: text ${i} label`);
    p.forEach((x, j) => assert.ok(Math.abs(x - c.held_out_proba[i][j]) <= TOL, `${what}: text ${i} ${c.classes[j]}: ${x} vs ${c.held_out_proba[i][j]}`));
  });
}

test('train() on an encoder pipeline: scikit-learn probabilities on held-out texts, every case', async () => {
  for (const c of G.cases) {
    const { examples, held_out } = G.sets[c.set];
    const events = [];
    const clf = await train('text-classification', minilm, examples, { C: c.C, onProgress: (p) => events.push(p) });
    const what = `${c.set} C=${c.C}`;
    assert.deepEqual(clf.head.labels, c.classes, `${what}: labels`);
    assert.equal(clf.head.C, c.C);
    assert.equal(clf.head.examples, examples.length);
    assert.ok(clf.head.converged && clf.training.converged, `${what}: converged`);
    assert.deepEqual(clf.head.encoder, { model_type: 'bert', hidden_size: 384, config_hash: clf.head.encoder.config_hash });
    assert.deepEqual(events.at(-1), { stage: 'embed', done: examples.length, total: examples.length });
    assert.ok(events.every((e) => e.stage === 'embed'), 'only embedding progress: the model was loaded already');
    assertLikeSklearn(what, await probabilities(clf, held_out, c.classes), c);
    console.log(`${what}: ${examples.length} examples embedded in ${clf.training.embed_ms.toFixed(0)} ms, fitted in ${clf.training.fit_ms.toFixed(1)} ms (${clf.training.iterations} iterations, ${clf.backend})`);
    clf.dispose();
  }
  // The encoder pipeline still works after its classifiers were disposed.
  assert.deepEqual((await minilm('still here', { pooling: 'mean' })).dims, [1, 384]);
});

test('a classifier answers as any text-classification pipeline: top_k, arrays, one text', async () => {
  const clf = await train('sentiment-analysis', minilm, G.sets.sentiment.examples);
  assert.equal(clf.task, 'text-classification');
  const one = await clf('What a wonderful day!');
  assert.equal(one.length, 1);
  assert.equal(one[0].label, 'positive');
  assert.equal(typeof one.wall_ms, 'number');
  const all = await clf(['What a wonderful day!', 'This is awful.'], { top_k: null });
  assert.equal(all.length, 2);
  assert.deepEqual(all.map((r) => r.length), [2, 2]);
  assert.ok(Math.abs(all[1][0].score + all[1][1].score - 1) < 1e-6);
  assert.equal(all[1][0].label, 'negative');
  // Watched (onProgress, signal) as any pipeline: the same answer, window by window.
  const seen = [];
  const watched = await clf(['What a wonderful day!', 'This is awful.'], { top_k: null, onProgress: (p) => seen.push(p.done), signal: new AbortController().signal });
  assert.deepEqual(watched.map((r) => r.map((x) => x.label)), all.map((r) => r.map((x) => x.label)));
  watched.flat().forEach((x, i) => assert.ok(Math.abs(x.score - all.flat()[i].score) < 1e-6));
  assert.deepEqual(seen, [0, 1, 2]);
  await assert.rejects(clf({ text: 'a', text_pair: 'b' }), /single texts, not pairs/);
  clf.dispose();
});

test('exportHead() round trip: bytes, a URL and a path load the same classifier', async () => {
  const c = G.cases.find((x) => x.set === 'topics');
  const { examples, held_out } = G.sets.topics;
  const clf = await train('text-classification', join(MODELS, 'minilm'), examples, { C: c.C });
  const bytes = clf.exportHead();
  assert.ok(bytes instanceof Uint8Array && bytes.length < 10000, `head is ${bytes.length} bytes`);
  const want = await clf(held_out, { top_k: null });
  const dir = mkdtempSync(join(tmpdir(), 'webert-head-'));
  writeFileSync(join(dir, 'topics.safetensors'), bytes);
  server = await serve({ mounts: { '/heads/': dir } });
  for (const [what, head] of [
    ['ArrayBuffer', bytes.slice().buffer],
    ['Uint8Array', bytes],
    ['Blob', new Blob([bytes])],
    ['URL', `${server.url}heads/topics.safetensors`],
    ['path', join(dir, 'topics.safetensors')],
  ]) {
    const loaded = await pipeline('text-classification', join(MODELS, 'minilm'), { head });
    assert.deepEqual(loaded.head, clf.head, what);
    assert.deepEqual(await loaded(held_out, { top_k: null }), want, what);
    assert.deepEqual(loaded.exportHead(), bytes, what);
    loaded.dispose();
  }
  clf.dispose();
});

test('a head refuses another encoder, malformed bytes and bad examples, clearly', async () => {
  const clf = await train('text-classification', minilm, G.sets.sentiment.examples);
  const head = clf.exportHead();
  await assert.rejects(
    pipeline('text-classification', join(MODELS, 'splade-tiny'), { head }),
    /trained on a bert encoder of hidden size 384 .*; the model is a bert encoder of hidden size 128/,
  );
  await assert.rejects(pipeline('text-classification', join(MODELS, 'minilm'), { head: new Uint8Array([1, 2, 3]) }), /classifier head: corrupt or unsupported safetensors/);
  await assert.rejects(pipeline('text-classification', join(MODELS, 'minilm'), { head: head.slice(0, head.length - 7) }), /classifier head/);
  await assert.rejects(pipeline('text-classification', join(MODELS, 'minilm'), { head: 42 }), /head must be a URL/);
  await assert.rejects(pipeline('feature-extraction', join(MODELS, 'minilm'), { head }), /head option is for text-classification/);
  await assert.rejects(train('text-classification', minilm, []), /non-empty array/);
  await assert.rejects(train('text-classification', minilm, [{ text: 'a', label: 'x' }, { text: 'b', label: 'x' }]), /at least two labels; got only "x"/);
  await assert.rejects(train('text-classification', minilm, [{ text: 'a', label: 'x' }, { text: 3, label: 'y' }]), /example 1: text must be a string/);
  await assert.rejects(train('text-classification', minilm, G.sets.sentiment.examples, { C: 0 }), /C must be a positive finite number/);
  await assert.rejects(train('fill-mask', minilm, G.sets.sentiment.examples), /teaches text-classification/);
  // Its options are checked as pipeline()'s: a misspelt key is refused, whichever the encoder.
  await assert.rejects(train('text-classification', minilm, G.sets.sentiment.examples, { devcie: 'cpu' }), /unknown pipeline option `devcie` \(did you mean `device`\?\)/);
  await assert.rejects(train('text-classification', join(MODELS, 'minilm'), G.sets.sentiment.examples, { c: 2 }), /unknown pipeline option `c`/);
  await assert.rejects(train('text-classification', minilm, G.sets.sentiment.examples, { head }), /train\(\) makes the classifier's head: `head` is pipeline\(\)'s option/);
  // Nothing above broke the shared model.
  assert.equal((await clf('Lovely!'))[0].label, 'positive');
  clf.dispose();
});

test('after a trap restarts the instance, the model reloads with its heads', async () => {
  const clf = await train('text-classification', join(MODELS, 'minilm'), G.sets.sentiment.examples);
  const texts = ['Lovely!', 'Awful.'];
  const want = await clf(texts, { top_k: null });
  await assert.rejects(testHooks(clf).trap(), /the WebAssembly instance was restarted/);
  assert.deepEqual(await clf(texts, { top_k: null }), want);
  clf.dispose();
});
