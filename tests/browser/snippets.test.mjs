// transformers.js's own documentation snippets for the encoder tasks, run as written with only the
// import line changed: the model ids are served by a local mock of the Hub (tests/mock-hub.mjs)
// from seeded tiny checkpoints and MiniLM, so the answers are those models', checked for
// transformers.js's result shapes and, where Hugging Face's Python pipeline runs the same files,
// against its values (tests/golden/snippets.json, from scripts/make_snippet_goldens.py).
//   node --test tests/browser/snippets.test.mjs      (after scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { MODELS, PKG, ROOT, golden, requireModels } from './golden.mjs';
import { serveHub } from '../mock-hub.mjs';

// The import line of every snippet, changed from '@huggingface/transformers'.
const { pipeline, cos_sim, env } = await import(join(PKG, 'webert.js'));
requireModels();

const tiny = (name) => ({ dir: join(ROOT, 'tests/tiny', name) });
const REPOS = {
  'Xenova/distilbert-base-uncased-finetuned-sst-2-english': tiny('distilbert-seqcls'),
  'Xenova/bert-base-multilingual-uncased-sentiment': tiny('roberta-seqcls'),
  'Xenova/toxic-bert': tiny('electra-seqcls'),
  'Xenova/bert-base-NER': { dir: join(MODELS, 'pii') },
  'Xenova/distilbert-base-uncased-distilled-squad': tiny('electra-qa'),
  'onnx-community/ettin-encoder-32m-ONNX': tiny('modernbert-mlm'),
  'Xenova/bert-base-cased': tiny('distilbert-mlm'),
  'Xenova/mobilebert-uncased-mnli': { dir: join(MODELS, 'minilm') },
  'Xenova/nli-deberta-v3-xsmall': tiny('deberta-v3-seqcls'),
  'onnx-community/all-MiniLM-L6-v2-ONNX': { dir: join(MODELS, 'minilm') },
  'Xenova/all-MiniLM-L6-v2': { dir: join(MODELS, 'minilm') },
};
const G = Object.fromEntries(golden('snippets.json').cases.map((c) => [c.name, c.output]));
let hub;

let cacheDir;
before(async () => {
  hub = await serveHub({ repos: REPOS });
  env.remoteHost = hub.url;
  // Node keeps ids on disk (default: in the package's folder); here, in a folder of this run.
  cacheDir = mkdtempSync(join(tmpdir(), 'webert-snippets-'));
  env.cacheDir = cacheDir;
});
after(() => {
  hub.close();
  rmSync(cacheDir, { recursive: true, force: true });
});

const close = (a, b, tol = 1e-4) => Math.abs(a - b) <= tol;
function assertLabels(got, want) {
  assert.deepEqual(got.map((x) => x.label), want.map((x) => x.label));
  got.forEach((x, i) => assert.ok(close(x.score, want[i].score), `${x.label}: ${x.score} vs ${want[i].score}`));
  got.forEach((x) => assert.deepEqual(Object.keys(x), ['label', 'score']));
}
function assertFilled(got, want) {
  assert.ok(Array.isArray(got) && got.every((p) => !Array.isArray(p)), 'one mask: a flat list');
  assert.deepEqual(got.map((p) => p.token), want.map((p) => p.token));
  got.forEach((p, i) => assert.ok(close(p.score, want[i].score), `${p.token}: ${p.score} vs ${want[i].score}`));
  got.forEach((p) => assert.deepEqual(Object.keys(p).sort(), ['score', 'sequence', 'token', 'token_str']));
}
const flat = (x) => (Array.isArray(x) ? x.flat(Infinity) : [x]);

test('text-classification: sentiment-analysis', async () => {
  const classifier = await pipeline('sentiment-analysis', 'Xenova/distilbert-base-uncased-finetuned-sst-2-english');
  const output = await classifier('I love transformers!');
  assertLabels(output, G.sentiment);
});

test('text-classification: top 5 classes', async () => {
  const classifier = await pipeline('sentiment-analysis', 'Xenova/bert-base-multilingual-uncased-sentiment');
  const output = await classifier('Le meilleur film de tous les temps.', { top_k: 5 });
  assertLabels(output, G['sentiment top 5']);
});

test('text-classification: all classes (top_k: null)', async () => {
  const classifier = await pipeline('text-classification', 'Xenova/toxic-bert');
  const output = await classifier('I hate you!', { top_k: null });
  assertLabels(output, G['toxic, all labels']);
});

test('text-classification: the README quick tour (the default model)', async () => {
  const pipe = await pipeline('sentiment-analysis');
  const out = await pipe('I love transformers!');
  assertLabels(out, G.sentiment);
});

test('text-classification: a batch gives the best label of each text', async () => {
  const classifier = await pipeline('sentiment-analysis', 'Xenova/distilbert-base-uncased-finetuned-sst-2-english');
  const output = await classifier(['I love transformers!', 'I hate you!']);
  assert.equal(output.length, 2);
  assertLabels([output[0]], G.sentiment);
  assert.deepEqual(Object.keys(output[1]), ['label', 'score']);
});

test('token-classification: named entities', async () => {
  const classifier = await pipeline('token-classification', 'Xenova/bert-base-NER');
  const output = await classifier('My name is Sarah and I live in London');
  assert.ok(output.length > 0);
  for (const e of output) {
    for (const k of ['entity', 'score', 'index', 'word']) assert.ok(k in e, `${k} in ${JSON.stringify(e)}`);
    assert.notEqual(e.entity, 'O');
  }
});

test('token-classification: all labels (ignore_labels: [])', async () => {
  const classifier = await pipeline('token-classification', 'Xenova/bert-base-NER');
  const text = 'Sarah lives in the United States of America';
  const output = await classifier(text, { ignore_labels: [] });
  assert.deepEqual(output.map((e) => e.word), ['sarah', 'lives', 'in', 'the', 'united', 'states', 'of', 'america']);
  assert.deepEqual(output.map((e) => e.index), [1, 2, 3, 4, 5, 6, 7, 8]);
  assert.ok(output.some((e) => e.entity === 'O'));
});

test('token-classification: aggregation_strategy simple', async () => {
  const classifier = await pipeline('token-classification', 'Xenova/bert-base-NER');
  const output = await classifier('My name is Sarah and I live in London', { aggregation_strategy: 'simple' });
  assert.ok(output.length > 0 && output.every((e) => 'entity_group' in e && 'score' in e && 'word' in e));
});

test('question-answering: (question, context) gives { answer, score }', async () => {
  const answerer = await pipeline('question-answering', 'Xenova/distilbert-base-uncased-distilled-squad');
  const question = 'Who was Jim Henson?';
  const context = 'Jim Henson was a nice puppet.';
  const output = await answerer(question, context);
  assert.ok(!Array.isArray(output) && typeof output.answer === 'string' && typeof output.score === 'number');
  assert.ok(context.includes(output.answer));
});

test('fill-mask: Ettin (transformers.js default)', async () => {
  const unmasker = await pipeline('fill-mask', 'onnx-community/ettin-encoder-32m-ONNX');
  const output = await unmasker('The capital of France is [MASK].');
  assertFilled(output, G['fill-mask ettin']);
});

test('fill-mask: BERT', async () => {
  const unmasker = await pipeline('fill-mask', 'Xenova/bert-base-cased');
  const output = await unmasker('The goal of life is [MASK].');
  assertFilled(output, G['fill-mask bert']);
  assert.deepEqual(output.map((p) => p.sequence), G['fill-mask bert'].map((p) => p.sequence));
});

test('fill-mask: top result (top_k: 1)', async () => {
  const unmasker = await pipeline('fill-mask', 'Xenova/bert-base-cased');
  const output = await unmasker('The Milky Way is a [MASK] galaxy.', { top_k: 1 });
  assertFilled(output, G['fill-mask top 1']);
});

test('zero-shot-classification: { sequence, labels, scores }', async () => {
  const classifier = await pipeline('zero-shot-classification', 'Xenova/mobilebert-uncased-mnli');
  const text = 'Last week I upgraded my iOS version and ever since then my phone has been overheating whenever I use your app.';
  const labels = ['mobile', 'billing', 'website', 'account access'];
  const output = await classifier(text, labels);
  assert.deepEqual(Object.keys(output), ['sequence', 'labels', 'scores']);
  assert.equal(output.sequence, text);
  assert.deepEqual([...output.labels].sort(), [...labels].sort());
  assert.ok(close(output.scores.reduce((a, b) => a + b, 0), 1, 1e-5), 'one distribution over the labels');
  assert.deepEqual(output.scores, [...output.scores].sort((a, b) => b - a), 'best first');
});

test('zero-shot-classification: multi_label', async () => {
  const classifier = await pipeline('zero-shot-classification', 'Xenova/nli-deberta-v3-xsmall');
  const text = 'I have a problem with my iphone that needs to be resolved asap!';
  const labels = ['urgent', 'not urgent', 'phone', 'tablet', 'computer'];
  const output = await classifier(text, labels, { multi_label: true });
  assert.equal(output.sequence, text);
  assert.deepEqual([...output.labels].sort(), [...labels].sort());
  assert.ok(output.scores.every((s) => s >= 0 && s <= 1));
});

test('feature-extraction: without pooling, a [1, tokens, 384] Tensor; tolist()', async () => {
  const extractor = await pipeline('feature-extraction', 'onnx-community/all-MiniLM-L6-v2-ONNX');
  const output = await extractor('This is a simple test.');
  assert.equal(output.type, 'float32');
  assert.ok(output.data instanceof Float32Array);
  assert.deepEqual(output.dims, [1, 8, 384]);
  const list = output.tolist();
  assert.equal(list.length, 1);
  assert.equal(list[0].length, 8);
  const want = flat(G.features);
  const got = flat(list);
  assert.equal(got.length, want.length);
  assert.ok(got.every((x, i) => close(x, want[i])));
  // The documented first values.
  assert.ok(close(output.data[0], 0.2157987803220749) && close(output.data[1], -0.09140099585056305));
});

test('feature-extraction: mean pooling and normalization, a [1, 384] Tensor', async () => {
  const extractor = await pipeline('feature-extraction', 'onnx-community/all-MiniLM-L6-v2-ONNX');
  const output = await extractor('This is a simple test.', { pooling: 'mean', normalize: true });
  assert.deepEqual(output.dims, [1, 384]);
  const want = flat(G['features mean normalized']);
  assert.ok([...output.data].every((x, i) => close(x, want[i])));
  assert.ok(close(output.data[0], 0.09528215229511261) && close(output.data[1], -0.024730168282985687));
});

test('feature-extraction: mean pooling and binary quantization, an int8 [1, 48] Tensor', async () => {
  const extractor = await pipeline('feature-extraction', 'onnx-community/all-MiniLM-L6-v2-ONNX');
  const output = await extractor('This is a simple test.', { pooling: 'mean', quantize: true, precision: 'binary' });
  assert.equal(output.type, 'int8');
  assert.ok(output.data instanceof Int8Array);
  assert.deepEqual(output.dims, [1, 48]);
  // The signs of PyTorch's pooled vector, 8 a byte, minus 128 (sentence-transformers' packing).
  const signs = flat(G['features mean normalized']).map((x) => (x > 0 ? 1 : 0));
  const want = Array.from({ length: 48 }, (_, j) => signs.slice(8 * j, 8 * j + 8).reduce((b, bit) => (b << 1) | bit, 0) - 128);
  assert.deepEqual([...output.data], want);
  // The documented first values.
  assert.deepEqual([...output.data.slice(0, 3)], [49, 108, 25]);
});

test('feature-extraction: sentences, output.tolist() and cos_sim', async () => {
  const extractor = await pipeline('feature-extraction', 'Xenova/all-MiniLM-L6-v2');
  const sentences = ['That is a happy person', 'That is a very happy person', 'The stock market fell'];
  const output = await extractor(sentences, { pooling: 'mean', normalize: true });
  const embeddings = output.tolist();
  assert.equal(embeddings.length, 3);
  assert.equal(embeddings[0].length, 384);
  const near = cos_sim(embeddings[0], embeddings[1]);
  const far = cos_sim(embeddings[0], embeddings[2]);
  assert.ok(near > far, `${near} vs ${far}`);
  // Normalized: the cosine is the dot product.
  assert.ok(close(near, embeddings[0].reduce((s, x, i) => s + x * embeddings[1][i], 0), 1e-5));
  assert.ok(close(cos_sim(output[0].data, output[1].data), near, 1e-6));
});

test('feature-extraction: output.data of a batch is the rows one after another', async () => {
  const extractor = await pipeline('feature-extraction', 'Xenova/all-MiniLM-L6-v2');
  const output = await extractor(['Hello world', 'Goodbye world'], { pooling: 'mean', normalize: true });
  assert.equal(Array.from(output.data).length, 2 * 384);
  assert.deepEqual(Array.from(output.data.subarray(384)), Array.from(output[1].data));
});

test('pipeline options as transformers.js code passes them: dtype, device, progress_callback', async () => {
  const statuses = new Set();
  const extractor = await pipeline('feature-extraction', 'Xenova/all-MiniLM-L6-v2', {
    dtype: 'fp32',
    device: 'wasm',
    progress_callback: (p) => statuses.add(p.status),
  });
  assert.deepEqual([...statuses].filter(Boolean).sort(), ['done', 'download', 'initiate', 'progress', 'progress_total', 'ready']);
  const output = await extractor('This is a simple test.', { pooling: 'mean', normalize: true });
  assert.deepEqual(output.dims, [1, 384]);
});
