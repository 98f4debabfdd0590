// `npm pack` of www/pkg installed into fresh apps, as a user would: a Vite build and a plain ESM
// page with an import map, both run in headless Chromium, a Node script; the .d.ts compiled by tsc.
//   node --test tests/browser/consumer.test.mjs      (after scripts/build_web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM_BACKEND, MODELS, NODE_BACKEND, PKG, ROOT, golden, entitiesU16, requireModels } from './golden.mjs';
import { launch } from './browser.mjs';
import { CONSOLE_HOOK, missing, openEngine } from './engines.mjs';
import { serve } from '../../scripts/serve.mjs';

requireModels();
const HERE = join(ROOT, 'tests/browser');
const BIN = join(HERE, 'node_modules/.bin');
const T = { timeout: 180_000 };
let dir;
let app;
let browser;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'webert-consumer-'));
  execFileSync('npm', ['pack', PKG, '--pack-destination', dir, '--silent'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  app = join(dir, 'app');
  cpSync(join(HERE, 'consumer'), app, { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module', dependencies: { webert: `file:../${tarball}` } }));
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent'], { cwd: app, stdio: 'inherit' });
  // The README's layout: the model folder in Vite's public/, served at /models/pii/.
  mkdirSync(join(app, 'public/models'), { recursive: true });
  symlinkSync(join(MODELS, 'pii'), join(app, 'public/models/pii'));
  browser = await launch();
});

after(async () => {
  await browser?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the packed package holds ESM, types, worker and wasm, with exports', () => {
  const pkg = join(app, 'node_modules/webert');
  const files = readdirSync(pkg).sort();
  for (const f of ['package.json', 'README.md', 'webert.js', 'webert.d.ts', 'testing.js', 'testing.d.ts', 'sharing.js', 'host.js', 'lane.js', 'worker.js', 'handler.js', 'model.js', 'hooks.js', 'redact.js', 'runtime.js', 'pool.js', 'warmup.js', 'files.js', 'cache.js', 'tilings.js', 'watchdog.js', 'teach.js', 'tensor.js', 'progress.js', 'options.js', 'simd.js', 'webert_wasm.js', 'webert_wasm_bg.wasm', 'webert_wasm_relaxed_bg.wasm', 'thread.js', 'webert_wasm_threads.js', 'webert_wasm_threads_bg.wasm']) {
    assert.ok(files.includes(f), `${f} missing from the package: ${files}`);
  }
  // Every module of the package's source is packed (a new one left out of "files" breaks imports).
  for (const f of readdirSync(join(ROOT, 'www/pkg-src')).filter((f) => f.endsWith('.js'))) {
    assert.ok(files.includes(f), `${f} is in www/pkg-src but not in the package (package.json "files")`);
  }
  assert.deepEqual(Object.keys(JSON.parse(execFileSync('node', ['-p', 'JSON.stringify(require("./package.json").exports)'], { cwd: pkg }))), ['.', './testing', './webert_wasm_bg.wasm', './webert_wasm_relaxed_bg.wasm', './webert_wasm_threads_bg.wasm', './package.json']);
});

test('the .d.ts types a consumer program (tsc --noEmit)', T, () => {
  execFileSync(join(BIN, 'tsc'), ['-p', join(app, 'tsconfig.json')], { cwd: app, stdio: 'inherit' });
});

test('in Node, the installed package runs from its name', T, () => {
  const c = golden('pii.json').cases.find((x) => x.name === 'unicode');
  const out = execFileSync('node', ['node-main.mjs', MODELS, c.text], { cwd: app, encoding: 'utf8' });
  const { entities, backend } = JSON.parse(out);
  assert.equal(backend, NODE_BACKEND);
  assert.deepEqual(entities.map((e) => [e.entity_group, e.start, e.end]), entitiesU16(c.text, c.pipeline.first).map((e) => [e.entity_group, e.start, e.end]));
});

test('the installed package: a pipeline shows no test hooks, webert/testing adds them', T, () => {
  const out = execFileSync('node', ['surface.mjs', MODELS], { cwd: app, encoding: 'utf8' });
  const { own, hooks, trap, declared } = JSON.parse(out);
  assert.deepEqual(own.filter((n) => /debug|trap|lose|lane|hook|threads/i.test(n)), [], `pipeline properties: ${own}`);
  assert.ok(own.includes('profile'));
  assert.deepEqual(hooks, ['laneStats', 'loseDevice', 'loseDeviceDuringCall', 'setWeightPrefetch', 'threads', 'trap', 'trapAsync', 'trapInNextCall', 'wasmMemory', 'weightPrefetch']);
  assert.match(trap, /debugTrap called.*instance was restarted/s);
  assert.deepEqual(declared.filter((n) => /debug|trap|lose|lane|hook|threads/i.test(n)), [], `declared in webert.d.ts: ${declared}`);
});

async function check(url, what) {
  const c = golden('pii.json').cases.find((x) => x.name === 'unicode');
  const { page } = browser;
  const logged = browser.logs.length;
  const failed = [];
  const models = [];
  const onResponse = (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    const file = new URL(r.url()).pathname.split('/models/pii/')[1];
    if (file) models.push(file);
  };
  page.on('response', onResponse);
  await page.goto(`${url}?text=${encodeURIComponent(c.text)}`);
  await page.waitForFunction(() => { const o = document.querySelector('#out'); return o.dataset.result || o.dataset.error; }, null, { timeout: 120_000 });
  const error = await page.$eval('#out', (o) => o.dataset.error ?? null);
  assert.equal(error, null, `${what}: ${error}`);
  const { entities, backend } = JSON.parse(await page.$eval('#out', (o) => o.dataset.result));
  assert.equal(backend, CHROMIUM_BACKEND);
  const want = entitiesU16(c.text, c.pipeline.first);
  assert.deepEqual(entities.map((e) => [e.entity_group, e.start, e.end]), want.map((e) => [e.entity_group, e.start, e.end]), what);
  page.off('response', onResponse);
  // The example names its dtype: the folder's files are asked for once each, and nothing else
  // (fewer when the Cache API has them).
  const needed = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model_q4.onnx'];
  assert.deepEqual(models.filter((f) => !needed.includes(f)), [], `${what}: files the example does not need were asked for`);
  assert.equal(new Set(models).size, models.length, `${what}: a file asked for twice: ${models}`);
  return { logs: browser.logs.slice(logged), failed };
}

/** A free port on 127.0.0.1. */
function freePort() {
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/** `vite` (the dev server) or `vite preview` in the app, until `close()`. */
async function vite(args) {
  const port = await freePort();
  // Vite colours its banner where the environment asks for colour (CI may), even inside the URL.
  const env = { ...process.env, NO_COLOR: '1' };
  delete env.FORCE_COLOR;
  const child = spawn(join(BIN, 'vite'), [...args, '--host', '127.0.0.1', '--port', String(port), '--strictPort'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stop = () => child.exitCode === null && child.kill();
  process.once('exit', stop);
  let said = '';
  await new Promise((ok, fail) => {
    const timer = setTimeout(() => {
      stop();
      fail(new Error(`vite ${args.join(' ')} did not start in 60 s: ${said}`));
    }, 60_000);
    const hear = (b) => {
      said += String(b).replace(/\x1b\[[0-9;]*m/g, '');
      if (said.includes(`:${port}`)) {
        clearTimeout(timer);
        ok();
      }
    };
    child.stdout.on('data', hear);
    child.stderr.on('data', hear);
    child.once('exit', (code) => fail(new Error(`vite ${args.join(' ')} exited (${code}): ${said}`)));
  });
  return { url: `http://127.0.0.1:${port}/`, close: stop };
}

/** No request of the README's example fails (SPA hosts answer index.html for missing files: told apart from files), and the console has no error. */
function quiet({ logs, failed }, what) {
  assert.deepEqual(failed, [], `${what}: failed requests`);
  const errors = logs.filter((l) => /^\[(error|pageerror)\]/.test(l));
  assert.deepEqual(errors, [], `${what}: console errors`);
}

test('a fresh Vite app builds with the package and runs it in Chromium', T, async () => {
  execFileSync(join(BIN, 'vite'), ['build', '--logLevel', 'warn'], { cwd: app, stdio: 'inherit' });
  const assets = readdirSync(join(app, 'dist/assets'));
  assert.ok(assets.some((f) => f.endsWith('.wasm')), `no .wasm in the Vite build: ${assets}`);
  const server = await serve({ mounts: { '/': join(app, 'dist'), '/models/': MODELS } });
  try {
    await check(server.url, 'vite build');
  } finally {
    await server.close();
  }
});

test('a plain ESM page (import map, no bundler) runs the package in Chromium', T, async () => {
  const server = await serve({ mounts: { '/': app, '/models/': MODELS } });
  try {
    await check(`${server.url}plain.html`, 'plain ESM');
  } finally {
    await server.close();
  }
});

test("the README's example as written under Vite's dev server (models in public/, with its index.html fallback), then `vite preview`", T, async () => {
  for (const args of [[], ['preview']]) {
    const server = await vite(args);
    try {
      quiet(await check(server.url, `vite ${args.join(' ') || 'dev'}`), `vite ${args.join(' ') || 'dev'}`);
    } finally {
      server.close();
    }
  }
});

test('a plain static server that answers missing files with its index.html (an SPA host) runs the example', T, async () => {
  const server = await serve({ mounts: { '/': app, '/models/': MODELS }, fallback: join(app, 'index.html') });
  try {
    quiet(await check(`${server.url}plain.html`, 'SPA fallback'), 'SPA fallback');
  } finally {
    await server.close();
  }
});

test('the Vite build and the plain ESM page run in Firefox and WebKit too', T, async (t) => {
  const c = golden('pii.json').cases.find((x) => x.name === 'unicode');
  const want = entitiesU16(c.text, c.pipeline.first).map((e) => [e.entity_group, e.start, e.end]);
  // (The hook keeps console errors where the driver reports none: WebKit's.)
  const built = await serve({ mounts: { '/': join(app, 'dist'), '/models/': MODELS }, headScript: CONSOLE_HOOK });
  const plain = await serve({ mounts: { '/': app, '/models/': MODELS }, headScript: CONSOLE_HOOK });
  try {
    for (const engine of ['firefox', 'webkit']) {
      if (missing(engine).length && !process.env.WEBERT_REQUIRE_BROWSERS) {
        t.diagnostic(`${engine}: not installed (${missing(engine).join(', ')}), skipped`);
        continue;
      }
      const b = await openEngine(engine);
      try {
        for (const [url, what] of [[built.url, 'vite build'], [`${plain.url}plain.html`, 'plain ESM']]) {
          await b.goto(`${url}?text=${encodeURIComponent(c.text)}`);
          let out = null;
          for (let i = 0; i < 600 && !(out?.result || out?.error); i++) {
            await new Promise((ok) => setTimeout(ok, 200));
            out = await b.evaluate(() => ({ result: document.querySelector('#out')?.dataset.result ?? null, error: document.querySelector('#out')?.dataset.error ?? null }));
          }
          assert.equal(out?.error, null, `${engine} ${what}: ${out?.error}`);
          assert.ok(out?.result, `${engine} ${what}: no answer in 120 s`);
          const { entities } = JSON.parse(out.result);
          assert.deepEqual(entities.map((e) => [e.entity_group, e.start, e.end]), want, `${engine} ${what}`);
        }
        // The pages logged no error.
        const errors = await b.errors();
        assert.deepEqual(errors, [], `${engine}: console errors`);
      } finally {
        await b.close();
      }
    }
  } finally {
    await built.close();
    await plain.close();
  }
});
