// Benchmark page: webert (www/pkg, served at /pkg/) and transformers.js (served at /tjs/, its
// onnxruntime-web wasm at /ort/) load the same model folder from /models/ and run the same text.
// Everything is local: env.allowRemoteModels = false and local wasmPaths. The result is left in
// window.__bench (read by tests/bench/run.mjs) and printed on the page.
import { pipeline as webertPipeline } from '/pkg/webert.js';
import { testHooks } from '/pkg/testing.js';
import { env, pipeline as tjsPipeline } from '/tjs/transformers.js';

const q = new URLSearchParams(location.search);
const threads = Number(q.get('threads') ?? 1);
const runs = Number(q.get('runs') ?? 20);
const warmup = Number(q.get('warmup') ?? 3);
// ...and warm-up calls go on until this long has passed for the row: V8 compiles hot wasm
// functions (both engines') in the background for a while after a page starts, and on a
// 2-core machine those compiles slowed the first row's calls (docs/performance.md).
const warmupMs = Number(q.get('warmupMs') ?? 2000);
const device = q.get('device') ?? 'wasm';
// webert's default in browsers is a Web Worker (two thread hops per call); worker=0 runs it on the
// page's thread, as transformers.js does here.
const inWorker = q.get('worker') !== '0';
// 'alternate' (default): webert and transformers.js take turns call by call; 'blocks': all of one
// engine's calls, then all of the other's (each keeps its caches warm, as in a page using one).
const order = q.get('order') ?? 'alternate';
// webert's `gpuWeights` option on the WebGPU rows (packed / dequantized; default: the engine's choice)
const gpuWeights = q.get('gpuWeights') ?? undefined;
const wanted = (q.get('models') ?? 'minilm,pii').split(',');
const tokenTargets = (q.get('tokens') ?? '15,128').split(',').map(Number);
// on/off: webert's f32 GEMMs prefetch the weights ahead or not (a test hook); unset: its default.
const prefetch = q.get('prefetch');
const out = document.getElementById('out');
const log = (s) => { out.textContent += `\n${s}`; console.log(s); };

env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = '/models/';
env.useBrowserCache = false;
env.backends.onnx.wasm.wasmPaths = {
  mjs: new URL('/ort/ort-wasm-simd-threaded.asyncify.mjs', location.href).href,
  wasm: new URL('/ort/ort-wasm-simd-threaded.asyncify.wasm', location.href).href,
};
env.backends.onnx.wasm.numThreads = threads;

const MODELS = {
  minilm: {
    task: 'feature-extraction', webert: '/models/minilm/', tjs: 'bench/tjs-minilm', dtype: 'fp32',
    label: 'MiniLM f32',
  },
  pii: { task: 'token-classification', webert: '/models/pii/', tjs: 'pii', dtype: 'q4', label: 'PII q4' },
  // The same q8 files (onnxruntime's dynamic quantization at transformers.js's settings) on both
  // sides: transformers.js's default dtype in browsers.
  'minilm-q8': {
    task: 'feature-extraction', webert: '/models/minilm/', tjs: 'bench/tjs-minilm', dtype: 'q8', label: 'MiniLM q8',
  },
  'pii-q8': { task: 'token-classification', webert: '/models/bench/pii-q8/', tjs: 'bench/pii-q8', dtype: 'q8', label: 'PII q8' },
};
const embeds = (key) => MODELS[key].task === 'feature-extraction';

// PII-rich English; prefixes of it (padded with " .") give exactly N tokens for each tokenizer.
const BASE = ('Hi, my name is John Smith and I live at 42 Elm Street, Springfield. You can email me at ' +
  'john.smith@example.com or call +1 415 555 0132 after six. My colleague Maria Garcia ' +
  '(maria.garcia@acme.org) handles billing; her account number is 12345678 and the routing number ' +
  'is 021000021. Please send the signed contract to our office at 100 Main Street before Friday, ' +
  'and copy our lawyer Peter Brown on it. Our website is https://acme.example.org and the tax ID is ' +
  '12-3456789. The passport of our new hire, Anna Lee, expires next year, so remind her in March. ').repeat(3);

function textWithTokens(tokenizer, n) {
  const count = (t) => tokenizer(t).input_ids.dims.at(-1);
  const words = BASE.split(' ');
  let lo = 1, hi = words.length; // largest prefix with count <= n
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (count(words.slice(0, mid).join(' ')) <= n) lo = mid; else hi = mid - 1;
  }
  let text = words.slice(0, lo).join(' ');
  while (count(text) < n) text += ' .';
  return { text, tokens: count(text) };
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

// Warm up both, then alternate webert / transformers.js call by call, so that load from other
// processes on a shared machine falls on both sides alike (or, with order=blocks, one engine's
// warm-up and runs, then the other's).
async function timePair(fa, fb) {
  const a = { ms: [] }, b = { ms: [] };
  const time = async (f, r) => {
    const t0 = performance.now();
    r.last = await f();
    r.ms.push(performance.now() - t0);
    if (typeof r.last?.ms === 'number') (r.engine ??= []).push(r.last.ms);
  };
  const both = [[fa, a], [fb, b]].filter(([f]) => f);
  const warm = async (fs) => {
    const t0 = performance.now();
    for (let i = 0; i < warmup || performance.now() - t0 < warmupMs; i++) for (const f of fs) await f();
  };
  if (order === 'blocks') {
    for (const [f, r] of both) {
      await warm([f]);
      for (let i = 0; i < runs; i++) await time(f, r);
    }
  } else {
    await warm(both.map(([f]) => f));
    for (let i = 0; i < runs; i++) for (const [f, r] of both) await time(f, r);
  }
  for (const r of [a, b]) { r.median = median(r.ms); r.min = Math.min(...r.ms); }
  return [fa ? a : null, b];
}

function cosine(a, b) {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return d / Math.sqrt(na * nb);
}

function compare(key, w, t) {
  if (embeds(key)) {
    // webert answers a Tensor as transformers.js does (its `data`), older builds a plain array.
    const cos = cosine(Array.from(w.data ?? w), Array.from(t.data));
    return { agree: cos > 0.9999, detail: `cosine ${cos.toFixed(6)}` };
  }
  // Token classification, aggregation 'none' on both sides: same tokens with the same labels.
  const ws = w.map((e) => `${e.index}:${e.entity}`), ts = t.map((e) => `${e.index}:${e.entity}`);
  const same = ws.length === ts.length && ws.every((s, i) => s === ts[i]);
  let maxd = 0;
  if (same) for (let i = 0; i < w.length; i++) maxd = Math.max(maxd, Math.abs(w[i].score - t[i].score));
  const diff = same ? '' : ` webert-only [${ws.filter((s) => !ts.includes(s)).join(' ')}] tjs-only [${ts.filter((s) => !ws.includes(s)).join(' ')}]`;
  return { agree: same, detail: `${ws.length}/${ts.length} labelled tokens, max |score diff| ${same ? maxd.toExponential(1) : '-'}${diff}` };
}

async function main() {
  const res = {
    threads, device, runs, warmup, warmupMs, order, worker: inWorker, crossOriginIsolated: self.crossOriginIsolated,
    hardwareConcurrency: navigator.hardwareConcurrency, userAgent: navigator.userAgent, rows: [], loads: [],
  };
  if (device === 'webgpu') {
    const a = await navigator.gpu?.requestAdapter();
    const i = a?.info ?? {};
    res.adapter = a ? `${i.vendor} ${i.architecture} ${i.device} ${i.description}`.trim() : 'none';
    log(`WebGPU adapter: ${res.adapter}`);
  }
  log(`crossOriginIsolated=${self.crossOriginIsolated} threads=${threads} device=${device} runs=${runs} warmup=${warmup} warmupMs=${warmupMs} webert worker=${inWorker}`);
  for (const key of wanted) {
    const m = MODELS[key];
    let t0 = performance.now();
    const w = await webertPipeline(m.task, m.webert, {
      cache: false, worker: inWorker, threads, device: device === 'webgpu' ? 'webgpu' : 'cpu',
      // Always named: with none, a browser load takes q8 where the folder has it (as transformers.js).
      dtype: m.dtype,
      ...(device === 'webgpu' && gpuWeights ? { gpuWeights } : {}),
    });
    const wLoad = performance.now() - t0;
    if (prefetch) await testHooks(w).setWeightPrefetch(prefetch === 'on');
    t0 = performance.now();
    const t = await tjsPipeline(m.task, m.tjs, { dtype: m.dtype, device });
    const tLoad = performance.now() - t0;
    log(`${m.label}: loaded webert ${wLoad.toFixed(0)} ms (${w.backend}), transformers.js ${tLoad.toFixed(0)} ms (${device})`);
    log(`  webert load phases${w.info.workerReused ? ' (the previous model\'s worker)' : ''}: ${JSON.stringify(w.info.loadPhases)}`);
    res.loads.push({ model: m.label, webert_ms: wLoad, tjs_ms: tLoad, phases: w.info.loadPhases, worker_reused: !!w.info.workerReused });
    for (const n of tokenTargets) {
      const { text, tokens } = textWithTokens(t.tokenizer, n);
      const opts = embeds(key) ? { pooling: 'mean', normalize: false } : {};
      const wopts = embeds(key) ? { pooling: 'mean', normalize: false } : { aggregation_strategy: 'none' };
      const [wr, tr] = await timePair(() => w(text, wopts), () => t(text, opts));
      const cmp = compare(key, wr.last, tr.last);
      // Packages older than the hook have none.
      const touches = await Promise.resolve().then(() => testHooks(w).weightPrefetch()).catch(() => null);
      cmp.detail += ` (webert on ${wr.last.backend}, ${w.info.threads} thread${w.info.threads > 1 ? 's' : ''}${w.info.int_kernel ? `, ${w.info.int_kernel}` : ''}` +
        `${touches ? `; weight prefetch ${touches}` : ''})`;
      const row = {
        model: m.label, key, tokens, threads, device,
        webert_ms: wr?.median ?? null, webert_threads: w.info.threads, webert_engine_ms: wr?.engine ? median(wr.engine) : null, tjs_ms: tr.median,
        ratio: wr ? tr.median / wr.median : null, agree: cmp.agree, detail: cmp.detail,
        webert_runs: wr?.ms, tjs_runs: tr.ms,
      };
      res.rows.push(row);
      log(`  ${tokens} tokens: webert ${row.webert_ms?.toFixed(1) ?? '-'} ms, transformers.js ${tr.median.toFixed(1)} ms, ` +
        `ratio ${row.ratio?.toFixed(2) ?? '-'}, agree ${cmp.agree} (${cmp.detail})`);
    }
    w?.dispose();
    await t.dispose?.();
  }
  log('done');
  return res;
}

window.__bench = main().catch((e) => { log(`ERROR ${e.stack ?? e}`); return { error: String(e.stack ?? e) }; });
