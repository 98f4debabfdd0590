#!/usr/bin/env node
// A long run in headless Chromium: three pipelines at once, each in its package Web Worker (NER
// with the PII model, feature extraction with MiniLM, text classification with MiniLM + the seeded
// classifier head), called in turn from the page with short and long texts, with model loads
// started and aborted along the way. Every `--every` calls it reports the page's and each
// worker's JS heap (after a GC), each model's WebAssembly memory, and the RSS and PSS of all of
// Chromium's processes: after the warm-up they should stay flat.
//   node tests/bench/soak.mjs [--calls 10000] [--every 1000] [--json target/soak.json]
// (after WEBERT_WEB_FEATURES=test-hooks bash scripts/build_web.sh: the wasm memory comes from a
// test hook). tests/browser/soak.test.mjs runs a short version and checks the flatness.
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from '../browser/browser.mjs';
import { serve } from '../../scripts/serve.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MODELS = process.env.WEBERT_MODELS ?? join(ROOT, 'models');

/** RSS and PSS (bytes) summed over `pid` and its descendants. */
export function memoryOfTree(pid) {
  const children = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  let rss = 0;
  let pss = 0;
  let procs = 0;
  const walk = (p) => {
    try {
      const rollup = readFileSync(`/proc/${p}/smaps_rollup`, 'utf8');
      rss += Number(rollup.match(/^Rss:\s+(\d+)/m)?.[1] ?? 0) * 1024;
      pss += Number(rollup.match(/^Pss:\s+(\d+)/m)?.[1] ?? 0) * 1024;
      procs++;
    } catch {
      // gone meanwhile
    }
    for (const c of children.get(p) ?? []) walk(c);
  };
  for (const c of children.get(pid) ?? []) walk(c); // Chromium is a child of this Node process
  return { rss, pss, procs };
}

/** The JS heap in use (bytes, after a GC) of the page and of every worker, by CDP. */
async function heaps(context, page) {
  const cdp = await context.newCDPSession(page);
  await cdp.send('HeapProfiler.collectGarbage');
  const pageHeap = (await cdp.send('Runtime.getHeapUsage')).usedSize;
  // Workers: attach (non-flat) and talk to each through Target.sendMessageToTarget.
  const sessions = [];
  const replies = new Map();
  cdp.on('Target.attachedToTarget', (e) => e.targetInfo.type === 'worker' && sessions.push(e.sessionId));
  cdp.on('Target.receivedMessageFromTarget', (e) => {
    const m = JSON.parse(e.message);
    replies.get(`${e.sessionId}:${m.id}`)?.(m.result ?? {});
  });
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  let id = 0;
  const ask = (sessionId, method) => new Promise((ok) => {
    const n = ++id;
    const timer = setTimeout(() => ok({}), 10_000);
    replies.set(`${sessionId}:${n}`, (r) => {
      clearTimeout(timer);
      ok(r);
    });
    cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id: n, method }) }).catch(() => ok({}));
  });
  const workers = [];
  for (const s of sessions) {
    await ask(s, 'HeapProfiler.collectGarbage');
    workers.push((await ask(s, 'Runtime.getHeapUsage')).usedSize ?? 0);
  }
  await cdp.detach();
  return { page: pageHeap, workers: workers.sort((a, b) => b - a) };
}

/** A MiniLM sequence classifier folder (the seeded head of tests/heads/seqcls), as symlinks. */
function classifierFolder() {
  const dir = mkdtempSync(join(tmpdir(), 'webert-soak-cls-'));
  for (const f of ['model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json']) {
    symlinkSync(join(MODELS, 'minilm', f), join(dir, f));
  }
  for (const f of ['config.json', 'head.safetensors']) symlinkSync(join(ROOT, 'tests/heads/seqcls', f), join(dir, f));
  return dir;
}

const MB = (b) => (b / 2 ** 20).toFixed(1);

/**
 * Runs the soak: `calls` calls in all, a checkpoint every `every`; `log(row)` hears each
 * checkpoint. Resolves to the checkpoints `{ calls, seconds, pageHeap, workerHeaps, wasm, rss, pss }`.
 */
export async function soak({ calls = 10_000, every = 1000, longEvery = 40, abortEvery = 250, log = () => {} } = {}) {
  const blank = mkdtempSync(join(tmpdir(), 'webert-soak-page-'));
  writeFileSync(join(blank, 'index.html'), '<!doctype html><meta charset="utf-8"><title>webert soak</title>');
  const cls = classifierFolder();
  const server = await serve({ mounts: { '/': blank, '/pkg/': join(ROOT, 'www/pkg'), '/models/': MODELS, '/cls/': cls } });
  const browser = await launch({ webgpu: false });
  const { page, context } = browser;
  const rows = [];
  try {
    await page.goto(server.url);
    await page.evaluate(async () => {
      const { pipeline, env } = await import('/pkg/webert.js');
      const { testHooks } = await import('/pkg/testing.js');
      env.spareWorkerMs = 0; // memory per checkpoint: no disposed load's worker waits
      const opts = { device: 'cpu' };
      const [ner, fx, clf] = await Promise.all([
        pipeline('ner', '/models/pii/', { ...opts, weights: 'onnx/model_q4.onnx' }),
        pipeline('feature-extraction', '/models/minilm/', opts),
        // The head is a file a folder URL does not name: the classifier comes as bytes.
        (async () => {
          const names = ['config.json', 'model.safetensors', 'head.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json'];
          const files = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await (await fetch(`/cls/${n}`)).arrayBuffer()])));
          return pipeline('text-classification', files, opts);
        })(),
      ]);
      const words = 'Maria Schmidt from Berlin wrote to maria.schmidt@example.com about the invoice 4711 due on 3 March, call +49 30 1234567 or visit 10 Downing Street'.split(' ');
      const text = (i, long) => {
        // Long texts of one length (many windows for NER, truncated elsewhere), so that the
        // warm-up reaches the largest batch; their words differ from call to call.
        const n = long ? 1500 : 5 + (i % 40);
        return Array.from({ length: n }, (_, k) => words[(i * 7 + k) % words.length]).join(' ');
      };
      let aborted = 0;
      /** `n` calls from `start`, the three pipelines at once; every `abortEvery`-th a model load aborted midway. */
      self.soakRun = async (start, n, longEvery, abortEvery) => {
        const lanes = [
          (i, t) => ner(t, { aggregation_strategy: 'simple' }).then((r) => r.length),
          (i, t) => fx(t, { pooling: 'mean', normalize: true, truncation: true }).then((r) => r.length),
          (i, t) => clf(t, { truncation: true }).then((r) => JSON.stringify(r).length),
        ];
        const loads = [];
        let next = start;
        const worker = async () => {
          for (;;) {
            const i = next++;
            if (i >= start + n) return;
            if (i % abortEvery === abortEvery - 1) {
              const ac = new AbortController();
              const p = pipeline('feature-extraction', '/models/minilm/', { device: 'cpu', signal: ac.signal, cache: false });
              setTimeout(() => ac.abort(), 30 + (i % 200));
              loads.push(p.then((x) => x.dispose(), () => aborted++));
            }
            await lanes[i % 3](i, text(i, i % longEvery === longEvery - 1));
          }
        };
        await Promise.all([worker(), worker(), worker()]);
        await Promise.all(loads);
        return aborted;
      };
      self.soakWasm = async () => Promise.all([ner, fx, clf].map((p) => testHooks(p).wasmMemory()));
    });
    const t0 = performance.now();
    for (let done = 0; done < calls;) {
      const n = Math.min(every, calls - done);
      const aborted = await page.evaluate(([s, k, l, a]) => self.soakRun(s, k, l, a), [done, n, longEvery, abortEvery]);
      done += n;
      const wasm = await page.evaluate(() => self.soakWasm());
      const h = await heaps(context, page);
      const m = memoryOfTree(process.pid);
      const row = { calls: done, seconds: (performance.now() - t0) / 1000, aborted, pageHeap: h.page, workerHeaps: h.workers, wasm, rss: m.rss, pss: m.pss, processes: m.procs };
      rows.push(row);
      log(row);
    }
  } finally {
    await browser.close();
    await server.close();
    rmSync(blank, { recursive: true, force: true });
    rmSync(cls, { recursive: true, force: true });
  }
  return rows;
}

/** One line of a checkpoint, in MiB. */
export function formatRow(r) {
  return `${String(r.calls).padStart(6)} calls ${r.seconds.toFixed(0).padStart(5)} s | page heap ${MB(r.pageHeap)} | worker heaps ${r.workerHeaps.map(MB).join(' / ')} | wasm ${r.wasm.map(MB).join(' / ')} (ner/fx/cls) | RSS ${MB(r.rss)} PSS ${MB(r.pss)} (${r.processes} procs) | aborted loads ${r.aborted}`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const rows = await soak({ calls: Number(arg('calls', 10_000)), every: Number(arg('every', 1000)), log: (r) => console.log(formatRow(r)) });
  const out = arg('json');
  if (out) {
    mkdirSync(dirname(resolve(out)), { recursive: true });
    writeFileSync(out, JSON.stringify(rows, null, 1));
  }
}
