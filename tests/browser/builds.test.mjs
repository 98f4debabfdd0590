// Which WebAssembly build the package starts: the relaxed-SIMD probe covers every relaxed
// instruction the relaxed build uses, an engine missing some of them gets the simd128 build, and
// a build that validates the probe but fails to compile falls back instead of failing the load.
//   node --test tests/browser/builds.test.mjs      (after scripts/build_web.sh)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MODELS, PKG, ROOT, requireModels } from './golden.mjs';

requireModels();
const { RELAXED_OPS } = await import(pathToFileURL(join(ROOT, 'www/pkg-src/simd.js')).href);

// binaryen's names of the relaxed-SIMD opcodes (after the 0xfd prefix).
const OPCODES = {
  'i8x16.relaxed_swizzle': 0x100, 'i32x4.relaxed_trunc_f32x4_s': 0x101, 'i32x4.relaxed_trunc_f32x4_u': 0x102,
  'i32x4.relaxed_trunc_f64x2_s_zero': 0x103, 'i32x4.relaxed_trunc_f64x2_u_zero': 0x104,
  'f32x4.relaxed_madd': 0x105, 'f32x4.relaxed_nmadd': 0x106, 'f64x2.relaxed_madd': 0x107, 'f64x2.relaxed_nmadd': 0x108,
  'i8x16.laneselect': 0x109, 'i16x8.laneselect': 0x10a, 'i32x4.laneselect': 0x10b, 'i64x2.laneselect': 0x10c,
  'f32x4.relaxed_min': 0x10d, 'f32x4.relaxed_max': 0x10e, 'f64x2.relaxed_min': 0x10f, 'f64x2.relaxed_max': 0x110,
  'i16x8.relaxed_q15mulr_s': 0x111, 'i16x8.relaxed_dot_i8x16_i7x16_s': 0x112, 'i32x4.relaxed_dot_i8x16_i7x16_add_s': 0x113,
};

// The threads build is the same kernels compiled with atomics; disassembling one build takes ~20 s.
test('the probe holds every relaxed-SIMD instruction the relaxed build uses', () => {
  const probed = new Set(RELAXED_OPS.map(([op]) => op));
  for (const build of ['webert_wasm_relaxed_bg.wasm']) {
    const text = execFileSync(join(ROOT, 'tests/browser/node_modules/.bin/wasm-dis'), ['--all-features', join(PKG, build)], { maxBuffer: 1 << 30 }).toString();
    const used = new Set(text.match(/\b(?:i8x16|i16x8|i32x4|i64x2|f32x4|f64x2)\.(?:relaxed_[a-z0-9_]+|laneselect)\b/g));
    assert.ok(used.has('f32x4.relaxed_madd'), `${build}: no relaxed_madd found; is it the relaxed build?`);
    for (const name of used) {
      assert.ok(name in OPCODES, `${build} uses ${name}, which this test does not know`);
      assert.ok(probed.has(OPCODES[name]), `${build} uses ${name}, which simd.js's probe does not check`);
    }
  }
});

// A module Worker fetches and links each static import before its first line runs (80-140 ms
// of a page's first load for ~30 modules): the build bundles them, leaving the wasm-bindgen glue
// (imported once the build is chosen) its own file.
test('the package\'s worker is one file: no static imports, the glue imported on demand', () => {
  const worker = readFileSync(join(PKG, 'worker.js'), 'utf8');
  assert.doesNotMatch(worker, /^\s*(import|export)\b[^(]*\bfrom\s*['"]/m, 'worker.js still imports modules statically');
  assert.match(worker, /\bHandler = class\b|\bclass Handler\b/, 'the handler is bundled into worker.js');
  const dynamic = [...worker.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]);
  assert.deepEqual([...new Set(dynamic.filter((d) => d.startsWith('.')))].sort(), ['./webert_wasm.js', './webert_wasm_threads.js']);
});

/** Loads MiniLM in a fresh Node (`flags`), after `patch` (code run first); returns its info and one embedding's length. */
function loadIn(flags, patch) {
  const script = `${patch}
    const { pipeline } = await import(${JSON.stringify(pathToFileURL(join(PKG, 'webert.js')).href)});
    const warnings = [];
    console.warn = (m) => warnings.push(String(m));
    const p = await pipeline('feature-extraction', ${JSON.stringify(join(MODELS, 'minilm'))});
    const out = await p('a short text');
    console.log(JSON.stringify({ info: p.info, backend: p.backend, dims: out.dims ?? [out.length], warnings }));
    p.dispose();`;
  return JSON.parse(execFileSync(process.execPath, [...flags, '--no-warnings', '--input-type=module', '-e', script]).toString());
}

test('an engine without relaxed SIMD runs the simd128 build and says why', () => {
  const r = loadIn([], '');
  assert.equal(r.info.wasmBuild, 'simd128');
  assert.equal(r.backend, 'cpu-simd128');
  assert.equal(r.info.wasmBuildNote, 'no relaxed SIMD in this engine');
});

test('an engine with every relaxed-SIMD instruction runs the relaxed build, with no note', () => {
  const r = loadIn(['--experimental-wasm-relaxed-simd'], '');
  assert.equal(r.info.wasmBuild, 'relaxed-simd');
  assert.equal(r.backend, 'cpu-relaxed-simd');
  assert.equal(r.info.wasmBuildNote, undefined);
});

test('an engine with relaxed SIMD in part (as WebKit) gets the simd128 build, naming what it lacks', () => {
  // This engine rejects any module using f64x2.relaxed_min (0xfd 0x8f 0x02), accepts the rest.
  const patch = `const validate = WebAssembly.validate;
    WebAssembly.validate = (b) => !String(new Uint8Array(b)).includes('253,143,2') && validate(b);`;
  const r = loadIn(['--experimental-wasm-relaxed-simd'], patch);
  assert.equal(r.info.wasmBuild, 'simd128');
  assert.equal(r.backend, 'cpu-simd128');
  assert.equal(r.info.wasmBuildNote, 'this engine lacks relaxed-SIMD opcodes 0xfd 271');
});

test('a relaxed build that fails to compile where the probe passed falls back to simd128', () => {
  // An engine that says yes to every probe but has no relaxed SIMD: the relaxed build's compile
  // fails, and the load goes on with the simd128 build instead of rejecting.
  const r = loadIn([], 'WebAssembly.validate = () => true;');
  assert.equal(r.info.wasmBuild, 'simd128');
  assert.equal(r.backend, 'cpu-simd128');
  assert.match(r.info.wasmBuildNote, /^the relaxed-SIMD build did not start: could not start webert's WebAssembly module from .*webert_wasm_relaxed_bg\.wasm/);
  assert.ok(r.warnings.some((w) => /using the simd128 build/.test(w)), r.warnings.join('\n'));
  assert.equal(r.dims.at(-1), 384);
});
