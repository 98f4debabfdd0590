// Shared by the Node and browser tests: the committed goldens (code-point offsets, as Python
// gives them) turned into what the JS API returns (UTF-16 offsets), and the comparisons.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const MODELS = process.env.WEBERT_MODELS ?? join(ROOT, 'models');
export const PKG = join(ROOT, 'www/pkg');
const { hasRelaxedSimd } = await import(pathToFileURL(join(ROOT, 'www/pkg-src/simd.js')).href);
/** The build the package starts (www/pkg-src/simd.js): in this Node process, and in Chromium (≥ 114). */
export const NODE_BACKEND = hasRelaxedSimd() ? 'cpu-relaxed-simd' : 'cpu-simd128';
export const CHROMIUM_BACKEND = 'cpu-relaxed-simd';
export const golden = (name) => JSON.parse(readFileSync(join(ROOT, 'tests/golden', name), 'utf8'));

/** UTF-16 index of code point `cp` in `text`. */
export const u16 = (text, cp) => [...text].slice(0, cp).join('').length;

/** Golden entities with UTF-16 offsets. */
export function entitiesU16(text, entities) {
  return entities.map((e) => ({ ...e, start: u16(text, e.start), end: u16(text, e.end) }));
}

const SCORE_TOL = 1e-4;
/**
 * q4 models on the CPU path's default integer kernels (`quantized: 'int'`): labels and spans
 * equal the f32 goldens; scores move by int8 activation rounding (relaxed SIMD) up to 3.7e-2
 * per token on these goldens (tests/quantized.rs, whose bound this is), int16 by 2e-4.
 */
export const INT_SCORE_TOL = 5e-2;

export function assertEntities(what, text, got, want, tol = SCORE_TOL) {
  const show = (list) => list.map((e) => `${e.entity ?? e.entity_group}:${e.start}..${e.end}`).join(' ');
  assert.equal(got.length, want.length, `${what}: ${show(got)} vs ${show(want)}`);
  want = entitiesU16(text, want);
  got.forEach((g, i) => {
    const w = want[i];
    assert.equal(g.entity ?? g.entity_group, w.entity ?? w.entity_group, what);
    assert.equal(g.word, w.word, what);
    assert.deepEqual([g.start, g.end], [w.start, w.end], `${what}: offsets of ${w.word}`);
    if ('index' in w) assert.equal(g.index, w.index, what);
    assert.ok(Math.abs(g.score - w.score) < tol, `${what}: score ${g.score} vs ${w.score}`);
  });
}

/** `got`: `[{ label, score }]`, or zero-shot's `{ sequence, labels, scores }`. */
export function assertLabelScores(what, got, want) {
  if (!Array.isArray(got)) got = got.labels.map((label, i) => ({ label, score: got.scores[i] }));
  assert.deepEqual(got.map((x) => x.label), want.map((x) => x.label), what);
  got.forEach((g, i) => assert.ok(Math.abs(g.score - want[i].score) < SCORE_TOL, `${what}: ${g.label}`));
}

/** `got`: nested arrays, or a Tensor (its flat `data`). */
export function assertClose(what, got, want, tol) {
  const a = got.data instanceof Float32Array ? Array.from(got.data) : got.flat(Infinity);
  const b = want.flat(Infinity);
  assert.equal(a.length, b.length, `${what}: length`);
  const d = a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
  assert.ok(d <= tol, `${what}: max abs diff ${d} > ${tol}`);
}

/** A model folder as `{ path: Uint8Array }`, the way a browser hands over fetched files. */
export function folderBytes(dir, extra = {}) {
  const out = {};
  const walk = (sub) => {
    for (const name of readdirSync(join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${name.name}` : name.name;
      if (name.isDirectory()) walk(rel);
      else if (/\.(json|safetensors|onnx)$/.test(name.name)) out[rel] = new Uint8Array(readFileSync(join(dir, rel)));
    }
  };
  walk('');
  return { ...out, ...extra };
}

/** MiniLM with a committed seeded test head (tests/heads/NAME), as a fine-tuned folder would be. */
export function withHead(head, encoder = 'minilm') {
  const dir = join(ROOT, 'tests/heads', head);
  const base = folderBytes(join(MODELS, encoder));
  delete base['config.json'];
  return { ...base, 'config.json': readFileSync(join(dir, 'config.json')), 'head.safetensors': readFileSync(join(dir, 'head.safetensors')) };
}

export function requireModels() {
  for (const m of ['minilm', 'pii', 'splade-tiny']) {
    if (!existsSync(join(MODELS, m, 'config.json'))) throw new Error(`${join(MODELS, m)} is missing: run scripts/fetch_models.sh`);
  }
}
