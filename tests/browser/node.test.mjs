// The built npm package (www/pkg) in Node: models handed over as bytes (as a browser does) or
// as a folder path, every task against the committed goldens, offsets as UTF-16 indices, and
// errors that arrive as Error objects with a clear message.
//   node --test tests/browser/node.test.mjs      (after scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import {
  INT_SCORE_TOL, MODELS, NODE_BACKEND, PKG, ROOT, golden, u16, assertEntities, assertLabelScores, assertClose, folderBytes, withHead, requireModels,
} from './golden.mjs';
import { serve } from '../../scripts/serve.mjs';

const { pipeline } = await import(join(PKG, 'webert.js'));
const { testHooks } = await import(join(PKG, 'testing.js'));
requireModels();

const STRATEGIES = ['none', 'simple', 'first', 'average', 'max'];
let pii;
let minilm;
let server;

before(async () => {
  // The goldens are f32 math; the default integer path for q4 weights has its own test below.
  pii = await pipeline('token-classification', folderBytes(join(MODELS, 'pii')), { quantized: 'f32' });
  minilm = await pipeline('feature-extraction', join(MODELS, 'minilm'));
  server = await serve({ mounts: { '/models/': MODELS, '/tiny/': join(ROOT, 'tests/tiny') } });
});
after(() => server.close());

test('loaded models say what runs them', () => {
  assert.equal(pii.backend, NODE_BACKEND);
  // No WebGPU in Node: auto had nothing to time.
  assert.equal(pii.info.probe, null);
  assert.equal(pii.gpuFailure, null);
  assert.equal(pii.info.task, 'token-classification');
  assert.equal(pii.info.labels.length, 35);
  assert.equal(minilm.info.hidden_size, 384);
});

test('PII on the default integer kernels: the golden entities and spans, scores close', async () => {
  const int = await pipeline('token-classification', join(MODELS, 'pii'));
  for (const c of golden('pii.json').cases) {
    for (const s of STRATEGIES) {
      assertEntities(`${c.name}/${s}`, c.text, await int(c.text, { aggregation_strategy: s }), c.pipeline[s], INT_SCORE_TOL);
    }
  }
  // Not the f32 path under another name: some score differs from it.
  const c = golden('pii.json').cases.find((x) => x.name === 'address_url');
  const [a, b] = [await int(c.text), await pii(c.text)];
  assert.ok(a.some((e, i) => e.score !== b[i].score), 'int and f32 gave identical scores');
  int.dispose();
  await assert.rejects(pipeline('ner', join(MODELS, 'pii'), { quantized: 'int4' }), /unknown quantized compute "int4"/);
});

test('PII: every golden case and aggregation strategy, UTF-16 offsets', async () => {
  for (const c of golden('pii.json').cases) {
    for (const s of STRATEGIES) {
      const got = await pii(c.text, { aggregation_strategy: s });
      assertEntities(`${c.name}/${s}`, c.text, got, c.pipeline[s]);
      for (const e of got) {
        if (s !== 'none') assert.ok(c.text.slice(e.start, e.end).length > 0);
      }
    }
  }
});

test('PII: a long text is windowed with a stride and merged', async () => {
  const g = golden('pii.json').long;
  for (const s of STRATEGIES.slice(1)) {
    const got = await pii(g.text, { aggregation_strategy: s, stride: g.stride, max_length: g.model_max_length });
    assertEntities(`long/${s}`, g.text, got, g.pipeline[s]);
  }
});

test('PII: emoji and combining accents before an entity; text.slice gives the entity', async () => {
  const text = '🤗👩‍👩‍👧 re\u0301sume\u0301 🇨🇭: my name is John Smith, mail john.smith@example.com';
  const got = await pii(text, { aggregation_strategy: 'first' });
  const names = got.filter((e) => e.entity_group === 'GIVEN_NAME' || e.entity_group === 'SURNAME');
  assert.deepEqual(names.map((e) => text.slice(e.start, e.end)), ['John', 'Smith']);
  assert.ok(got.some((e) => e.entity_group === 'EMAIL' && text.slice(e.start, e.end) === 'john'));
  // The unicode golden case has emoji and accents before its entities; check the slices there too.
  const c = golden('pii.json').cases.find((x) => x.name === 'unicode');
  const cpSlice = (t, a, b) => [...t].slice(a, b).join('');
  const want = c.pipeline.first.map((e) => cpSlice(c.text, e.start, e.end));
  const mine = (await pii(c.text, { aggregation_strategy: 'first' })).map((e) => c.text.slice(e.start, e.end));
  assert.deepEqual(mine, want);
  assert.ok(want.some((w) => /[üë]/.test(w)));
});

test('batched input gives one result per text; results carry backend and timings', async () => {
  const cases = golden('pii.json').cases;
  const got = await pii(cases.map((c) => c.text), { aggregation_strategy: 'simple' });
  assert.equal(got.length, cases.length);
  got.forEach((r, i) => assertEntities(cases[i].name, cases[i].text, r, cases[i].pipeline.simple));
  assert.equal(got.backend, NODE_BACKEND);
  assert.ok(got.ms >= 0 && got.wall_ms >= got.ms);
  assert.deepEqual(Object.keys(got), cases.map((_, i) => String(i)), 'meta stays out of enumeration');
});

test('MiniLM: embeddings, token states, similarity ranking and zero-shot match PyTorch', async () => {
  const g = golden('minilm.json');
  for (const c of g.cases.filter((x) => x.text_pair === null && x.truncation_max_length === null)) {
    const pooled = await minilm(c.text, { pooling: 'mean', normalize: true });
    assert.deepEqual(pooled.dims, [1, 384], 'a string is a batch of one, as in transformers.js');
    assertClose(`${c.name} mean_l2`, pooled, c.pooled.mean_l2, 1e-4);
    assertClose(`${c.name} cls`, await minilm(c.text, { pooling: 'cls' }), c.pooled.cls, 1e-4);
    assertClose(`${c.name} first_token`, await minilm(c.text, { pooling: 'first_token' }), c.pooled.cls, 1e-4);
    if (c.last_hidden_state) {
      // No pooling is the default, as transformers.js: [1, tokens, hidden].
      const states = await minilm(c.text);
      assert.deepEqual(states.dims, [1, c.last_hidden_state.length, 384]);
      assertClose(`${c.name} states`, states, c.last_hidden_state, 1e-4);
      assertClose(`${c.name} states[0]`, states[0].tolist(), c.last_hidden_state, 1e-4);
    }
  }
  const batch = await minilm(g.batch.texts, { pooling: 'mean', normalize: true });
  assert.deepEqual(batch.dims, [g.batch.texts.length, 384]);
  assert.equal(batch.type, 'float32');
  assertClose('padded batch', batch.tolist(), g.batch.pooled.mean_l2, 1e-4);
  assert.ok(batch.backend === NODE_BACKEND && batch.ms >= 0, 'the call facts ride on the Tensor');
  // Token states of a batch: padded to the longest text with zero rows, as one tensor.
  const [short, long] = ['hi', 'a somewhat longer sentence than the other'];
  const states = await minilm([short, long]);
  const [a, b] = [(await minilm(short)).dims[1], (await minilm(long)).dims[1]];
  assert.deepEqual(states.dims, [2, b, 384]);
  assertClose('short text in a batch', states[0].tolist().slice(0, a), (await minilm(short)).tolist()[0], 1e-5);
  assert.ok(states[0].tolist().slice(a).flat().every((x) => x === 0), 'rows past the short text are 0');
  // transformers.js's last_token / eos: each text's last real token (not a padding row).
  for (const name of ['last_token', 'eos']) {
    const last = await minilm([short, long], { pooling: name });
    assert.deepEqual(last.dims, [2, 384]);
    assertClose(`${name} short`, last[0].tolist(), states[0].tolist()[a - 1], 1e-5);
    assertClose(`${name} long`, last[1].tolist(), states[1].tolist()[b - 1], 1e-5);
  }
  // quantize: the pooled vector's signs, 8 a byte, first in the high bit (transformers.js's packing).
  const mean = (await minilm([short, long], { pooling: 'mean', normalize: true })).tolist();
  const pack = (v) => Array.from({ length: v.length / 8 }, (_, j) => v.slice(j * 8, j * 8 + 8).reduce((byte, x, k) => byte | ((x > 0 ? 1 : 0) << (7 - k)), 0));
  const ubin = await minilm([short, long], { pooling: 'mean', normalize: true, quantize: true, precision: 'ubinary' });
  assert.equal(ubin.type, 'uint8');
  assert.deepEqual(ubin.dims, [2, 48]);
  assert.deepEqual(ubin.tolist(), mean.map(pack));
  const bin = await minilm(short, { pooling: 'mean', quantize: true });
  assert.equal(bin.type, 'int8');
  assert.deepEqual(bin.tolist(), [pack(mean[0]).map((x) => x - 128)]);
  await assert.rejects(minilm(short, { quantize: true }), /quantize packs pooled vectors: give a pooling/);
  await assert.rejects(minilm(short, { pooling: 'mean', quantize: true, precision: 'ternary' }), /precision must be 'binary' or 'ubinary'/);

  const ranked = await minilm.rank(g.similarity.query, g.similarity.candidates);
  assert.deepEqual(ranked.map((r) => r.corpus_id), g.similarity.ranking);
  ranked.forEach((r) => assert.ok(Math.abs(r.score - g.similarity.cosine[r.corpus_id]) < 1e-4));
  assert.equal(ranked[0].text, g.similarity.candidates[g.similarity.ranking[0]]);

  const zs = await pipeline('zero-shot-classification', join(MODELS, 'minilm'));
  for (const c of g.zero_shot.cases) {
    const single = await zs(c.sequence, c.candidate_labels, { hypothesis_template: g.zero_shot.hypothesis_template });
    // transformers.js's and Hugging Face's shape.
    assert.deepEqual(Object.keys(single), ['sequence', 'labels', 'scores']);
    assert.equal(single.sequence, c.sequence);
    assertLabelScores('single', single, c.single_label.labels.map((label, i) => ({ label, score: c.single_label.scores[i] })));
    const multi = await zs(c.sequence, c.candidate_labels.join(', '), { multi_label: true });
    assertLabelScores('multi', multi, c.multi_label.labels.map((label, i) => ({ label, score: c.multi_label.scores[i] })));
  }
});

test('zero-shot by an NLI model (seeded head) equals the HF pipeline; options as transformers.js', async () => {
  const g = golden('nli.json');
  const zs = await pipeline('zero-shot-classification', withHead('nli'));
  assert.equal(zs.info.zero_shot, 'nli');
  for (const c of g.cases) {
    const hypothesis_template = c.hypothesis_template ?? undefined;
    for (const key of ['single_label', 'multi_label']) {
      const multi_label = key === 'multi_label';
      // HF's pipeline cuts a long premise (`truncation="only_first"`); webert when asked.
      const all = await zs(c.texts, c.candidate_labels, { multi_label, hypothesis_template, truncation: true });
      assert.equal(all.method, 'nli');
      c.results.forEach((r, i) => assertLabelScores(`${c.name} ${key}`, all[i], r[key].labels.map((label, j) => ({ label, score: r[key].scores[j] }))));
    }
    // the labels inside the options object, as `candidate_labels`
    const one = await zs(c.texts[0], { candidate_labels: c.candidate_labels, hypothesis_template, truncation: true });
    assertLabelScores(`${c.name} options`, one, c.results[0].single_label.labels.map((label, j) => ({ label, score: c.results[0].single_label.scores[j] })));
  }
  const sim = await pipeline('zero-shot-classification', join(MODELS, 'minilm'));
  assert.equal((await sim('a text', ['a', 'b'])).method, 'similarity');
});

test('a watched call reports its windows, answers as unwatched, and stops between two when aborted', async () => {
  const text = 'John Smith lives at 42 Elm Street, Springfield. '.repeat(200);
  const opts = { aggregation_strategy: 'first' };
  const key = (es) => es.map((e) => [e.entity_group, e.start, e.end]);
  const plain = await pii(text, opts);
  const seen = [];
  const watched = await pii(text, { ...opts, onProgress: (p) => seen.push(p) });
  assert.deepEqual(key(watched), key(plain));
  const total = seen[0].total;
  assert.ok(total >= 3, `several windows: ${JSON.stringify(seen)}`);
  assert.deepEqual(seen, Array.from({ length: total + 1 }, (_, done) => ({ stage: 'windows', done, total })));

  const ac = new AbortController();
  const stoppedSeen = [];
  const stopped = pii(text, { ...opts, signal: ac.signal, onProgress: (p) => stoppedSeen.push(p.done) === 2 && ac.abort() });
  await assert.rejects(stopped, { name: 'AbortError' });
  assert.deepEqual(key(await pii(text, opts)), key(plain), 'the next call answers');
  assert.ok(Math.max(...stoppedSeen) <= 2, `the aborted call went on: ${stoppedSeen}`);
  await assert.rejects(pii('John', { signal: AbortSignal.abort() }), { name: 'AbortError' });
});

test('the newer families through the package: MPNet, Jina v2 (ALiBi), DeBERTa-v3, ALBERT, the rotary ones against PyTorch', async () => {
  const tiny = (name) => JSON.parse(readFileSync(join(ROOT, 'tests/tiny', name, 'golden.json'), 'utf8'));
  const singles = (g) => g.cases.flatMap((c) => c.inputs).filter((i) => !i.text_pair);
  // Sentence embeddings: a sentence-transformers folder (mean + Normalize) and Jina's mean.
  for (const [name, key, normalize] of [['mpnet-base-st', 'sentence_embedding', true], ['jina-v2-base', 'mean_pooled', false]]) {
    const fe = await pipeline('feature-extraction', join(ROOT, 'tests/tiny', name));
    for (const input of singles(tiny(name))) {
      assertClose(`${name} ${key}`, await fe(input.text, { pooling: 'mean', normalize }), input[key], 1e-4);
    }
    fe.dispose();
  }
  // Sequence classification: softmax of PyTorch's logits, label order and scores.
  // The rotary families: ModernBERT (a 618-token text past its sliding window, and mean
  // pooling), NomicBERT, GTE, EuroBERT (late pooling).
  for (const name of ['deberta-v3-seqcls', 'albert-seqcls', 'mpnet-seqcls', 'modernbert-seqcls', 'modernbert-seqcls-mean',
    'nomic-bert-seqcls', 'gte-seqcls', 'eurobert-seqcls']) {
    const g = tiny(name);
    const clf = await pipeline('text-classification', `${server.url}tiny/${name}/`);
    for (const input of g.cases.flatMap((c) => c.inputs)) {
      const e = input.logits.map((x) => Math.exp(x - Math.max(...input.logits)));
      const sum = e.reduce((a, b) => a + b, 0);
      const want = g.id2label.map((label, i) => ({ label, score: e[i] / sum })).sort((a, b) => b.score - a.score);
      const text = input.text_pair ? { text: input.text, text_pair: input.text_pair } : input.text;
      assertLabelScores(`${name} ${input.text.slice(0, 20)}`, await clf(text, { top_k: null }), want);
    }
    clf.dispose();
  }
});

test('text classification (seeded head): softmax, sigmoid, pairs, top_k', async () => {
  const g = golden('seqcls.json');
  const clf = await pipeline('text-classification', withHead('seqcls'));
  for (const c of g.cases) {
    const input = c.text_pair === null ? c.text : { text: c.text, text_pair: c.text_pair };
    assertLabelScores('softmax', await clf(input, { top_k: null }), c.pipeline.softmax);
    assertLabelScores('sigmoid', await clf(input, { top_k: null, function_to_apply: 'sigmoid' }), c.pipeline.sigmoid);
    assertLabelScores('top 1', await clf(input), c.pipeline.softmax.slice(0, 1));
  }
  clf.dispose();
});

test('question answering (seeded head): every golden case, UTF-16 offsets', async () => {
  const qa = await pipeline('question-answering', withHead('qa'));
  for (const c of golden('qa.json').cases) {
    const answer = await qa(c.question, c.context, c.params);
    // top_k 1 gives the answer itself, as transformers.js and Hugging Face's pipeline.
    const one = (c.params?.top_k ?? 1) === 1;
    assert.equal(Array.isArray(answer), !one, c.name);
    const got = one ? [answer].filter(Boolean) : answer;
    assert.equal(got.length, c.answers.length, c.name);
    got.forEach((a, i) => {
      const w = c.answers[i];
      assert.equal(a.answer, w.answer, c.name);
      assert.deepEqual([a.start, a.end], [u16(c.context, w.start), u16(c.context, w.end)], c.name);
      assert.equal(c.context.slice(a.start, a.end), w.answer, c.name);
      assert.ok(Math.abs(a.score - w.score) < 1e-4, c.name);
    });
  }
  // transformers.js's other forms: an object, and batches (one context or one per question).
  // The first three goldens use the default options but top_k 3: with top_k 1, their best answer.
  const cases = golden('qa.json').cases.slice(0, 3);
  const alone = [];
  for (const c of cases) {
    const a = await qa(c.question, c.context);
    assert.equal(a.answer, c.answers[0].answer, c.name);
    assert.ok(Math.abs(a.score - c.answers[0].score) < 1e-4, c.name);
    alone.push(a);
  }
  assert.deepEqual(await qa({ question: cases[0].question, context: cases[0].context }), alone[0]);
  assert.deepEqual(await qa(cases.map((c) => c.question), cases.map((c) => c.context)), alone);
  assert.deepEqual(await qa(cases.map((c) => ({ question: c.question, context: c.context }))), alone);
  const shared = await qa(cases.map((c) => c.question), cases[0].context);
  assert.deepEqual(shared[0], alone[0]);
  assert.equal(shared.length, cases.length);
  const two = await qa([cases[0].question], [cases[0].context], { top_k: 2 });
  assert.ok(Array.isArray(two[0]) && two[0].length <= 2 && two[0][0].answer === alone[0].answer);
  await assert.rejects(qa(['a?', 'b?'], ['one context']), /2 questions and 1 contexts/);
});

test('fill-mask: top-5 tokens per mask', async () => {
  const fill = await pipeline('fill-mask', join(MODELS, 'splade-tiny'));
  for (const c of golden('splade.json').fill_mask.cases) {
    const answer = await fill(c.text, { top_k: c.top_k });
    // One mask: its list itself, as transformers.js; several: a list per mask.
    const got = c.predictions.length === 1 ? [answer] : answer;
    assert.equal(got.length, c.predictions.length);
    got.forEach((preds, m) => {
      assert.equal(preds.length, c.top_k ?? 5);
      assert.deepEqual(preds.map((p) => p.token_str), c.predictions[m].map((p) => p.token_str));
      assert.deepEqual(preds.map((p) => p.sequence), c.predictions[m].map((p) => p.sequence));
      preds.forEach((p, i) => assert.ok(Math.abs(p.score - c.predictions[m][i].score) < 1e-4));
    });
  }
  fill.dispose();
});

test('next-sentence prediction (seeded heads on splade-tiny): pairs alone and batched', async () => {
  const g = golden('nsp.json');
  for (const [kind, m] of Object.entries(g.models)) {
    const nsp = await pipeline('next-sentence-prediction', withHead(kind, 'splade-tiny'));
    const inputs = m.cases.map((c) => ({ text: c.text, text_pair: c.text_pair }));
    const batched = await nsp(inputs);
    for (const [i, c] of m.cases.entries()) {
      for (const got of [await nsp(inputs[i]), batched[i]]) {
        const want = g.labels.map((label, j) => ({ label, score: c.probs[j] })).sort((a, b) => b.score - a.score);
        assertLabelScores(`${kind} ${i}`, got, want);
      }
    }
    await assert.rejects(nsp('just one sentence'), /takes \{ text, text_pair \}/);
    nsp.dispose();
  }
  await assert.rejects(pipeline('next-sentence-prediction', join(MODELS, 'splade-tiny')), /cannot do next-sentence-prediction/);
});

test('text scoring: pseudo-log-likelihoods, per-token log-probs, UTF-16 offsets', async () => {
  const fill = await pipeline('fill-mask', join(MODELS, 'splade-tiny'));
  const scorer = await pipeline('text-scoring', join(MODELS, 'splade-tiny'));
  const cases = golden('pll.json').cases;
  const check = (c, got) => {
    assert.ok(Math.abs(got.pseudo_log_likelihood - c.pseudo_log_likelihood) <= 1e-3 * Math.max(1, Math.abs(c.pseudo_log_likelihood)), c.text);
    assert.equal(got.tokens.length, c.tokens.length, c.text);
    got.tokens.forEach((t, i) => {
      const w = c.tokens[i];
      assert.equal(t.token, w.token);
      assert.deepEqual([t.start, t.end], [u16(c.text, w.start), u16(c.text, w.end)], c.text);
      assert.ok(Math.abs(t.log_prob - w.log_prob) <= 1e-3, `${c.text}: ${t.token}`);
    });
  };
  for (const c of cases) {
    const o = c.max_length === null ? {} : { max_length: c.max_length };
    check(c, await fill.score(c.text, o));
  }
  const plain = cases.filter((c) => c.max_length === null);
  (await scorer(plain.map((c) => c.text))).forEach((got, i) => check(plain[i], got));
  // Past an astral emoji, UTF-16 offsets differ from code points: slice() still gives the word.
  const emoji = plain.find((c) => c.text.includes('😀'));
  const after = (await scorer(emoji.text)).tokens.find((t) => t.token === 'then');
  assert.equal(emoji.text.slice(after.start, after.end), 'then');
  fill.dispose();
  scorer.dispose();
});

test('models load from a URL with progress events, and a sha256 is checked', async () => {
  const events = [];
  const url = `${server.url}models/pii/`;
  const sum = golden('pii.json').model.onnx_sha256;
  const p = await pipeline('ner', url, { onProgress: (e) => events.push(e), sha256: { 'onnx/model_q4.onnx': sum } });
  // What came, in one line, for a failure's message.
  const seen = JSON.stringify(events.map((e) => [e.stage, e.file, e.bytes, e.total, e.message].filter((x) => x !== undefined)));
  const stages = [...new Set(events.map((e) => e.stage))];
  assert.deepEqual(stages, ['download', 'compile', 'ready'], seen);
  const last = events.filter((e) => e.stage === 'download').at(-1);
  assert.equal(last.bytes, last.total, seen);
  assert.ok(last.bytes > 10e6, seen);
  const c = golden('pii.json').cases[0];
  assertEntities('via URL', c.text, await p(c.text, { aggregation_strategy: 'first' }), c.pipeline.first);
  // Where the load's time went: each phase measured, together the model thread's total.
  const { total_ms, wall_ms, worker_ms, worker_start_ms, build, ...phases } = p.info.loadPhases;
  assert.deepEqual(Object.keys(build).sort(), ['gpu_ms', 'image_ms', 'pack_ms', 'parse_ms', 'plan_ms', 'probe_ms']);
  assert.ok(Object.values(build).reduce((a, b) => a + b) <= phases.build_ms + 1, JSON.stringify(p.info.loadPhases));
  assert.ok(build.parse_ms > 0 && build.pack_ms > 0, JSON.stringify(build));
  assert.deepEqual(Object.keys(phases), ['compile_ms', 'files_ms', 'start_and_files_ms', 'copy_ms', 'build_ms', 'warm_ms']);
  assert.ok(Object.values(phases).every((ms) => ms >= 0) && phases.build_ms > 0, JSON.stringify(p.info.loadPhases));
  // The module's start and the files run at once: each within the span that waits for both.
  const { compile_ms, files_ms, ...laps } = phases;
  assert.ok(Math.max(compile_ms, files_ms) <= laps.start_and_files_ms + 1, JSON.stringify(p.info.loadPhases));
  assert.ok(Math.abs(Object.values(laps).reduce((a, b) => a + b) - total_ms) < 1, JSON.stringify(p.info.loadPhases));
  assert.ok(wall_ms >= total_ms && worker_ms >= 0);
  assert.ok(worker_start_ms >= 0 && worker_start_ms <= worker_ms, JSON.stringify(p.info.loadPhases));
  p.dispose();
  await assert.rejects(pipeline('ner', url, { sha256: { 'onnx/model_q4.onnx': '00'.repeat(32) } }), /model_q4\.onnx: sha256 mismatch/);
});

test('sharded safetensors are found through their index; `weights` picks a file', async () => {
  const g = JSON.parse(readFileSync(join(ROOT, 'tests/tiny/bert-bf16-sharded/golden.json')));
  const events = [];
  const tiny = await pipeline('feature-extraction', `${server.url}tiny/bert-bf16-sharded`, { onProgress: (e) => events.push(e.file) });
  assert.ok(events.includes('model-00001-of-00002.safetensors') && events.includes('model-00002-of-00002.safetensors'));
  for (const c of g.cases) {
    for (const input of c.inputs.filter((i) => i.text_pair == null)) {
      assertClose(c.name, await tiny(input.text, { pooling: 'none' }), input.last_hidden_state, 1e-3);
    }
  }
  tiny.dispose();
  const q4 = await pipeline('ner', `${server.url}models/pii`, { weights: 'onnx/model_q4.onnx', cache: false });
  assert.equal(q4.info.labels.length, 35);
  q4.dispose();
  await assert.rejects(pipeline('ner', `${server.url}models/pii`, { weights: 'onnx/model_fp16.onnx' }), /model_fp16\.onnx: HTTP 404/);
});

test('errors are Error objects with clear messages', async () => {
  const bad = (what, promise, re) => assert.rejects(promise, (e) => {
    assert.ok(e instanceof Error, what);
    assert.match(e.message, re, what);
    return true;
  });
  const files = folderBytes(join(MODELS, 'pii'));
  const { 'config.json': _c, ...noConfig } = files;
  await bad('no config', pipeline('ner', noConfig), /no config\.json/);
  const { 'onnx/model_q4.onnx': _w, ...noWeights } = files;
  await bad('no weights', pipeline('ner', noWeights), /no weights/);
  const gpt = JSON.stringify({ ...JSON.parse(readFileSync(join(MODELS, 'pii/config.json'))), model_type: 'gpt2', architectures: ['GPT2LMHeadModel'] });
  await bad('architecture', pipeline('ner', { ...files, 'config.json': new TextEncoder().encode(gpt) }), /unsupported model_type `gpt2`/);
  await bad('corrupt weights', pipeline('ner', { ...files, 'onnx/model_q4.onnx': new Uint8Array(1000).fill(7) }), /model_q4\.onnx/);
  await bad('network', pipeline('ner', 'http://127.0.0.1:9/models/pii/'), /network error fetching http:\/\/127\.0\.0\.1:9\/models\/pii\/config\.json/);
  await bad('404', pipeline('ner', `${server.url}models/nothing-here/`), /nothing-here\/config\.json: HTTP 404/);
  await bad('missing dir', pipeline('ner', join(ROOT, 'no-such-model')), /no such folder/);
  await bad('wrong head', pipeline('text-classification', files), /cannot do text-classification: it is a bert model with a token-classification head/);
  await bad('webgpu', pipeline('ner', files, { device: 'webgpu' }), /WebGPU is not available here/);
  await bad('device', pipeline('ner', files, { device: 'gpu0' }), /unknown device "gpu0"/);
  await bad('task', pipeline('summarization', files), /unknown task "summarization"/);
  await bad('option', pii('hi', { agregation_strategy: 'first' }), /unknown field `agregation_strategy`/);
  await bad('strategy', pii('hi', { aggregation_strategy: 'best' }), /token-classification options: unknown value `best`, expected one of `none`, `simple`, `first`, `average`, `max`$/);
  await bad('not text', pii(42), /text must be a string/);
  const long = 'word '.repeat(600);
  await bad('too long', minilm(long), /input is \d+ tokens; the model takes at most 512 \(to cut it there: `truncation: true` in JS, --truncate in the CLI\)/);
  assert.deepEqual((await minilm(long, { truncation: true, pooling: 'mean' })).dims, [1, 384]);
  // One rule for every task that reads a text whole: zero-shot too.
  const zsLong = await pipeline('zero-shot-classification', join(MODELS, 'minilm'));
  await bad('zero-shot too long', zsLong(long, ['a', 'b']), /input is \d+ tokens; the model takes at most 512 \(to cut it there: `truncation: true` in JS/);
  assert.deepEqual((await zsLong(long, ['a', 'b'], { truncation: true })).labels.sort(), ['a', 'b']);
  zsLong.dispose();
  const ac = new AbortController();
  const loading = pipeline('ner', `${server.url}models/pii/`, { signal: ac.signal, cache: false });
  ac.abort();
  await assert.rejects(loading, (e) => e.name === 'AbortError');
});

test('one truncation rule: every task that reads a text whole refuses a long one, naming `truncation: true`, and cuts it when asked; NER and QA read it in windows', async () => {
  const long = 'word '.repeat(600);
  const named = /input is \d+ tokens; the model takes at most 512 \(to cut it there: `truncation: true` in JS, --truncate in the CLI\)/;
  const clf = await pipeline('text-classification', withHead('seqcls'));
  const fill = await pipeline('fill-mask', join(MODELS, 'splade-tiny'));
  const nsp = await pipeline('next-sentence-prediction', withHead('nsp', 'splade-tiny'));
  const qa = await pipeline('question-answering', withHead('qa'));
  try {
    const whole = {
      'text-classification': (o) => clf(long, o),
      'text-classification (pair)': (o) => clf({ text: long, text_pair: 'a short one' }, o),
      'rank (query)': (o) => minilm.rank(long, ['a', 'b'], o),
      'rank (document)': (o) => minilm.rank('a', ['b', long], o),
      'fill-mask': (o) => fill(`[MASK] ${long}`, o),
      'next-sentence-prediction': (o) => nsp({ text: long, text_pair: 'a short one' }, o),
    };
    for (const [task, call] of Object.entries(whole)) {
      await assert.rejects(call(), named, task);
      await assert.rejects(call({ truncation: false }), named, `${task}, truncation: false`);
      const cut = await call({ truncation: true });
      assert.ok(Array.isArray(cut) && cut.length > 0, `${task}: ${JSON.stringify(cut)}`);
    }
    // `truncation: true` cuts at the model's limit, as the number 512 does.
    assert.deepEqual(await clf(long, { truncation: true, top_k: null }), await clf(long, { truncation: 512, top_k: null }));
    // Windowed tasks take any length, as Hugging Face's pipelines do.
    assert.ok(Array.isArray(await pii(`${long}My name is John Smith.`)));
    assert.equal(typeof (await qa('What is repeated?', long)).answer, 'string');
  } finally {
    for (const p of [clf, fill, nsp, qa]) p.dispose();
  }
});

test('hostile texts never kill the module', async () => {
  const texts = ['', ' ', '\u0000\u0001\u200b', '\ud800 lone surrogate \udfff', '🤗'.repeat(3000), 'a'.repeat(20000), '\u0301'.repeat(50), 'x\r\n\t'.repeat(200)];
  for (const t of texts) {
    const got = await pii(t, { aggregation_strategy: 'first' });
    for (const e of got) assert.ok(e.start <= e.end && e.end <= t.length);
  }
  const c = golden('pii.json').cases[0];
  assertEntities('after hostile texts', c.text, await pii(c.text), c.pipeline.none);
});

test('a trapped WebAssembly instance is replaced and the model reloaded', async () => {
  await assert.rejects(testHooks(pii).trap(), /internal error \(panicked at .*debugTrap called\); the WebAssembly instance was restarted/s);
  const c = golden('pii.json').cases[0];
  assertEntities('after a trap', c.text, await pii(c.text, { aggregation_strategy: 'first' }), c.pipeline.first);
  const ranked = await minilm.rank('bread', ['sourdough loaves', 'stock market']);
  assert.equal(ranked[0].corpus_id, 0);
});

test('a pipeline shows no test hooks; webert/testing adds them; profile() is public', async () => {
  const names = (o) => [...Object.getOwnPropertyNames(o), ...Object.getOwnPropertySymbols(o).map(String)];
  for (const p of [pii, minilm]) {
    const hidden = names(p).filter((n) => /debug|trap|lose|lane|hook|threads/i.test(n));
    assert.deepEqual(hidden, [], 'hook-like properties on a pipeline');
  }
  assert.deepEqual(Object.keys(testHooks(pii)).sort(), ['laneStats', 'loseDevice', 'loseDeviceDuringCall', 'setWeightPrefetch', 'threads', 'trap', 'trapAsync', 'trapInNextCall', 'wasmMemory', 'weightPrefetch']);
  assert.match(await testHooks(minilm).weightPrefetch(), /^(on|off), /);
  assert.equal(testHooks(pii).laneStats(), null); // no worker in Node
  assert.equal(await testHooks(minilm).threads(1), 1);
  assert.throws(() => testHooks({}), /testHooks\(\) takes a pipeline/);
  assert.throws(() => testHooks(null), TypeError);
  const profile = await minilm.profile('where does the time go');
  const kinds = Object.keys(profile);
  assert.ok(kinds.length > 0 && Object.values(profile).every((ms) => Number.isFinite(ms) && ms >= 0), JSON.stringify(profile));
  await assert.rejects(minilm.profile(42), /text must be a string/);
  // The roofline: its fractions are its own figures' ratios, the floor the longer of its two
  // bounds (at least the weight stream), the weights those the engine packed.
  const r = await minilm.roofline('how near the limits does this run', { runs: 3 });
  assert.ok(r.tokens > 2 && r.forward_ms > 0 && r.weight_bytes > 1e6 && r.read_gb_per_s > 0 && r.peak_gmac_per_s > 0, JSON.stringify(r));
  assert.ok(Math.abs(r.weight_gb_per_s - r.weight_bytes / (r.forward_ms * 1e6)) < 1e-9 * r.weight_gb_per_s, JSON.stringify(r));
  assert.ok(Math.abs(r.of_read_bandwidth - r.weight_gb_per_s / r.read_gb_per_s) < 1e-9, JSON.stringify(r));
  assert.ok(r.floor_ms >= r.weight_bytes / (r.read_gb_per_s * 1e6) * (1 - 1e-9), JSON.stringify(r));
  assert.ok(Math.abs(r.of_floor - r.floor_ms / r.forward_ms) < 1e-9, JSON.stringify(r));
  await assert.rejects(minilm.roofline('x', { runs: 0 }), /positive integer/);
  await assert.rejects(minilm.roofline('x', { rnus: 2 }), /takes \{ runs \}, not rnus/);
  const dts = readFileSync(join(PKG, 'webert.d.ts'), 'utf8');
  assert.doesNotMatch(dts, /debug|trap|loseDevice|laneStats|testHooks/i);
  assert.match(dts, /\bprofile\(text: string\)/);
  assert.match(dts, /\broofline\(text: string, options\?: \{ runs\?: number \}\)/);
});

test('webert/testing says so when the build has no test hooks', async () => {
  // A build without the cargo feature `test-hooks`, as far as its glue shows: no debugTrap or
  // debugTrapAsync, no WebEngine.debugLoseDevice.
  const { runtime } = await import(join(PKG, 'runtime.js'));
  const { glue } = runtime;
  const { debugTrap: _t, debugTrapAsync: _a, ...plain } = glue;
  plain.WebEngine = { prototype: {} };
  runtime.glue = plain;
  try {
    for (const hook of ['trap', 'trapAsync', 'loseDevice']) {
      await assert.rejects(testHooks(pii)[hook](), /no test hooks; build the package with the cargo feature `test-hooks`/, hook);
    }
  } finally {
    runtime.glue = glue;
  }
  const c = golden('pii.json').cases[0];
  assertEntities('after the refused hooks', c.text, await pii(c.text), c.pipeline.none);
});

test('redact() and the pattern layer: UTF-16 offsets around astral characters, validated identifiers', async () => {
  const { redact } = await import(join(PKG, 'webert.js'));
  const text = '👋🏽 Zoë Müller 😀: zoë.müller@beispiel.de, +41 44 123 45 67, IBAN CH93 0076 2011 6238 5295 7, ' +
    'card 4111 1111 1111 1111, host 192.168.0.1 or 2001:db8::1 😀.';
  const secrets = {
    EMAIL: 'zoë.müller@beispiel.de', PHONE: '+41 44 123 45 67', IBAN: 'CH93 0076 2011 6238 5295 7',
    CREDIT_CARD: '4111 1111 1111 1111', IP_ADDRESS: '192.168.0.1',
  };
  const plain = await pii(text, { aggregation_strategy: 'first' });
  assert.ok(plain.every((e) => !('source' in e)), 'source only with the pattern layer');
  const ents = await pii(text, { aggregation_strategy: 'first', patterns: true });
  assert.ok(ents.every((e) => ['model', 'pattern'].includes(e.source)));
  for (const [label, s] of Object.entries(secrets)) {
    const e = ents.find((x) => x.source === 'pattern' && x.word === s);
    assert.ok(e, `${label} ${s} not found: ${JSON.stringify(ents)}`);
    assert.equal(e.entity_group, label);
    assert.equal(text.slice(e.start, e.end), s);
  }
  // No model entity overlaps a pattern match.
  for (const p of ents.filter((e) => e.source === 'pattern')) {
    assert.ok(ents.every((m) => m.source === 'pattern' || m.end <= p.start || p.end <= m.start));
  }
  const red = redact(text, ents);
  assert.ok(red.startsWith('👋🏽 ') && red.endsWith(' 😀.'), red);
  for (const s of [...Object.values(secrets), 'beispiel', '2001:db8', 'Müller']) assert.ok(!red.includes(s), `${s} in ${red}`);
  for (const label of Object.keys(secrets)) assert.ok(red.includes(`[${label}]`), `${label} in ${red}`);

  // Offsets are UTF-16: 😀 is two code units, and an entity may end inside a surrogate pair.
  assert.equal(redact('😀 Zoë Müller 😀', [{ entity_group: 'GIVEN_NAME', start: 3, end: 5 }, { entity: 'B-SURNAME', start: 7, end: 13 }]), '😀 [GIVEN_NAME] [SURNAME] 😀');
  assert.equal(redact('a 😀b c', [{ label: 'X', start: 2, end: 3 }]), 'a [X] c');
  assert.equal(redact('Zoë❤️ de Madrid', [{ label: 'SURNAME', start: 0, end: 4 }]), '[SURNAME] de Madrid');
  const names = [[0, 4], [9, 13], [18, 21]].map(([start, end]) => ({ entity_group: 'PERSON', start, end }));
  assert.equal(redact('Anna and anna met Bob', names, { style: 'pseudonym' }), '[PERSON_1] and [PERSON_1] met [PERSON_2]');
  assert.equal(redact('Anna and anna met Bob', names, { style: 'mask' }), '█████ and █████ met █████');
  assert.equal(redact('Anna met Bob', names.slice(0, 1), { style: 'mask', mask: '***' }), '*** met Bob');
  assert.throws(() => redact('abc', [{ label: 'X', start: 0, end: 9 }]), /outside the text/);
  assert.throws(() => redact('abc', [], { style: 'blur' }), /unknown redaction style "blur"/);
  assert.throws(() => redact('abc', [{ start: 0, end: 1 }]), /entities\[0\] has no entity_group/);
  assert.throws(() => redact('abc', [{ label: 'X', start: 0.5, end: 1 }]), /entities\[0\]\.start must be a UTF-16 offset/);

  const custom = await pii('ID 😀 EMP-123456.', { custom_patterns: [{ label: 'EMPLOYEE_ID', regex: 'EMP-\\d{6}' }] });
  const emp = custom.find((e) => e.entity_group === 'EMPLOYEE_ID');
  assert.deepEqual([emp.start, emp.end, emp.source], [6, 16, 'pattern']);
  await assert.rejects(pii('x', { custom_patterns: [{ label: 'BAD', regex: '(' }] }), /pattern BAD/);
  await assert.rejects(pii('x', { patterns: 'yes' }), /token-classification options/);
});
