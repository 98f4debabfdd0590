// One loaded model where the computation happens (inside the worker, or in the calling thread):
// starts the WebAssembly module, builds the engine from the model's files on WebGPU or the CPU,
// runs task requests one at a time, and replaces a trapped WebAssembly instance instead of
// staying dead. With `threads` > 1 where the context is cross-origin isolated, the threads build
// runs, its helpers in Web Workers that share its memory.

import { gatherFiles, isNode } from './files.js';
import { hasRelaxedSimd, wasmUrl } from './simd.js';

let started;
// The wasm-bindgen glue of the build that runs (the threads build has its own).
let glue;
// Web Workers helping the threads build; they belong to the current instance.
let helpers = [];
// Whether those helpers have run the warm-up forwards (see Model.load).
let helpersWarm = false;
// Bumped when a trapped instance is replaced: engines built before belong to the old one.
let generation = 0;

// A panic inside an async (WebGPU) call traps in a microtask, where no promise sees it: the
// panic hook calls this, which fails the pending call instead of leaving it hanging.
let failPending = null;
globalThis.__webertPanic = (message) => failPending?.(new WebAssembly.RuntimeError(message));

/** Awaits an async engine call; a trap while it runs rejects it with a RuntimeError. */
function guarded(promise) {
  return new Promise((resolve, reject) => {
    failPending = reject;
    promise.then(resolve, reject).finally(() => {
      if (failPending === reject) failPending = null;
    });
  });
}

/**
 * The adapter WebGPU gives this context, or null: `{ name, isFallbackAdapter }`, named as
 * readably as the browser allows. A fallback adapter (SwiftShader) emulates a GPU on the CPU.
 */
export async function webgpuAdapter() {
  try {
    const adapter = typeof navigator !== 'undefined' && navigator.gpu && (await navigator.gpu.requestAdapter());
    if (!adapter) return null;
    const i = adapter.info ?? {};
    const name = [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' ') || 'unnamed adapter';
    return { name, isFallbackAdapter: !!(i.isFallbackAdapter ?? adapter.isFallbackAdapter) };
  } catch {
    return null;
  }
}

/** ONNX Runtime Web's default, which transformers.js keeps: half the cores, at most 4. */
export function defaultThreads() {
  return Math.min(4, Math.ceil((globalThis.navigator?.hardwareConcurrency || 1) / 2));
}

/** Whether Web Workers may share WebAssembly memory here (and the threads build can run). */
export function threadsPossible() {
  return !isNode && typeof Worker !== 'undefined' && typeof SharedArrayBuffer !== 'undefined' &&
    globalThis.crossOriginIsolated === true && hasRelaxedSimd();
}

function startWasm(report, threads) {
  started ??= (async () => {
    if (threads > 1 && threadsPossible()) {
      try {
        return await startBuild(report, true);
      } catch (e) {
        // e.g. no room for a shared memory of this size: one thread still works
        console.warn(`webert: the threads build did not start (${e.message}); running on one thread`);
      }
    }
    return startBuild(report, false);
  })().catch((e) => {
    started = undefined; // let a later pipeline try again
    throw e;
  });
  return started;
}

async function startBuild(report, threaded) {
  // Literal URLs and import paths, so that bundlers copy every build.
  const url = threaded ? new URL('./webert_wasm_threads_bg.wasm', import.meta.url) : wasmUrl();
  report?.({ stage: 'compile', file: url.pathname.split('/').pop(), bytes: 0, total: 0 });
  try {
    glue = threaded ? await import('./webert_wasm_threads.js') : await import('./webert_wasm.js');
    if (isNode) {
      const fsName = 'node:fs/promises'; // a variable, so that bundlers leave it alone
      const fs = await import(/* @vite-ignore */ fsName);
      await glue.default({ module_or_path: await fs.readFile(url) });
    } else {
      await glue.default({ module_or_path: url });
    }
  } catch (e) {
    throw new Error(`could not start webert's WebAssembly module from ${url.href}: ${e.message}`);
  }
}

/**
 * Starts helpers until `threads` threads (this one included) share the CPU work, as far as the
 * build allows; resolves to the count in force.
 */
async function useThreads(threads) {
  if (!glue.canThread() || threads <= 1) return glue.setThreads(1);
  const module = glue.sharedModule();
  const memory = glue.sharedMemory();
  const joining = [];
  while (helpers.length < Math.min(threads, 16) - 1) {
    const worker = new Worker(new URL('./thread.js', import.meta.url), { type: 'module', name: `webert-thread-${helpers.length + 1}` });
    helpers.push(worker);
    joining.push(new Promise((resolve, reject) => {
      worker.onmessage = ({ data }) => (data.error ? reject(new Error(data.error)) : resolve());
      worker.onerror = (e) => {
        e.preventDefault?.();
        reject(new Error(`a webert thread could not start: ${e.message || 'is thread.js served as JavaScript?'}`));
      };
    }));
    worker.postMessage({ module, memory });
  }
  try {
    await Promise.all(joining);
    // Joined means started: they register with the pool a moment later.
    const until = performance.now() + 2000;
    while (glue.threadPoolHelpers() < helpers.length && performance.now() < until) {
      await new Promise((r) => setTimeout(r, 1));
    }
  } catch (e) {
    console.warn(`webert: running on fewer threads: ${e.message}`);
  }
  return glue.setThreads(threads);
}

/** After a trap: the helpers belong to the dead instance. */
function stopHelpers() {
  for (const w of helpers) w.terminate();
  helpers = [];
  helpersWarm = false;
}

const WARM_TOKENS = [7, 8, 9, 10, 11, 32];
const WARM_DELAY_MS = 100;

export class Model {
  /** @param source model folder URL, File[] / FileList, or name → bytes object */
  constructor(source, options = {}) {
    this.source = source;
    this.options = options;
    this.engine = null;
    this.info = null;
    this.queue = Promise.resolve();
    this.queued = 0;
    this.warmed = 0; // warm-up steps done (see warmStep)
  }

  /** Downloads or reads the files and builds the engine. `report` gets progress events. */
  async load(report) {
    const threads = Math.max(1, Math.floor(this.options.threads ?? defaultThreads()));
    await startWasm(report, threads);
    const threadsInUse = await useThreads(threads);
    const { origin, files } = await gatherFiles(this.source, this.options, report);
    this.options.signal?.throwIfAborted();
    if (typeof this.source !== 'string' && !(this.source instanceof URL)) {
      // Keep re-readable files for a reload after a trap: the given Files/Blobs, else copies as
      // Blobs (which may live outside the JS heap) so that the caller's buffers can be freed.
      this.source = Object.fromEntries(files.map((f) => [f.name, f.blob ?? new Blob([f.bytes])]));
    }
    const total = files.reduce((s, f) => s + f.bytes.byteLength, 0);
    report?.({ stage: 'compile', bytes: total, total });
    const loader = new glue.ModelLoader(origin);
    for (const f of files) loader.add(f.name, f.bytes);
    files.length = 0;
    const device = this.options.device ?? 'auto';
    const allowFallback = !!this.options.allowFallbackAdapter;
    const adapter = device === 'cpu' ? null : await webgpuAdapter();
    // `upload` covers setting WebGPU up and, under auto, timing it against the CPU.
    if (adapter && (device === 'webgpu' || allowFallback || !adapter.isFallbackAdapter)) report?.({ stage: 'upload', bytes: total, total });
    try {
      const quantized = this.options.quantized ?? 'int';
      this.engine = await guarded(loader.load(device, allowFallback, this.options.probe !== false, quantized));
      this.generation = generation;
    } catch (e) {
      throw this.recover(e);
    }
    this.info = JSON.parse(this.engine.info());
    this.info.threads = this.engine.hasGpu() ? 1 : threadsInUse;
    // V8 runs a new helper's WebAssembly unoptimized for its first few forwards (measured: about
    // a third of the engine's speed, so the engine waited on them): a few forwards at load, with
    // pauses in which idle helpers return to their event loop. Once per set of helpers.
    if (this.info.threads > 1 && !helpersWarm) {
      for (let i = 0; i < 4; i++) {
        this.engine.warmUp(2, Math.min(128, this.info.max_length));
        await new Promise((r) => setTimeout(r, 30));
      }
      helpersWarm = true;
    }
    if (this.engine.hasGpu() && adapter) {
      this.info.adapter = adapter.name + (adapter.isFallbackAdapter ? ' (fallback adapter)' : '');
    }
    report?.({ stage: 'ready', bytes: total, total });
    this.loadedAt = performance.now();
    return this.info;
  }

  /** Runs one request on the engine: synchronously on the CPU, awaited on WebGPU. */
  async run(task, request) {
    const json = JSON.stringify(request);
    if (!this.engine.hasGpu()) return this.engine.callSync(task, json);
    return guarded(this.engine.call(task, json));
  }

  /**
   * `call` done at once, for a CPU engine that is ready with nothing queued (the worker's express
   * lane): the result with the engine's JSON text as `json`, or null where `call` must be used.
   */
  callNow(task, requestJson) {
    if (!this.readyNow()) return null;
    this.warmed = Infinity; // calls warm it from now on
    try {
      const t0 = performance.now();
      const json = this.engine.callSync(task, requestJson);
      return { json, ...this.meta(t0) };
    } catch (e) {
      throw this.recover(e);
    }
  }

  /** What a call's result says besides its value, for a call started at `t0`. */
  meta(t0) {
    return { ms: performance.now() - t0, backend: this.engine.backend(), gpu_failure: this.engine.gpuFailure() };
  }

  /** The `trap` test hook, at once: throws the error `call` would after a trap. */
  trapNow() {
    try {
      glue.debugTrap();
    } catch (e) {
      throw this.recover(e);
    }
  }

  /**
   * One forward of the warm-up that idle time buys before the first call (worker.js): V8 runs
   * WebAssembly unoptimized until a function has run a while and optimizes it in the
   * background, so a first call took 1.5–2.5x the later ones. 7–11 tokens (whose last strips
   * take every short tile) and 32, three times; short forwards, so that a call never waits long
   * behind one, starting 100 ms after the load. Returns the milliseconds to wait before the
   * next step (a pause for the optimizing compiler after each round), or -1 when done.
   */
  warmStep() {
    if (!this.readyNow() || this.warmed >= 3 * WARM_TOKENS.length) return -1;
    // A call right after loading should not wait behind a step.
    const wait = this.loadedAt + WARM_DELAY_MS - performance.now();
    if (wait > 0) return wait;
    const tokens = WARM_TOKENS[this.warmed++ % WARM_TOKENS.length];
    try {
      this.engine.warmUp(1, Math.min(tokens, this.info.max_length));
    } catch (e) {
      this.warmed = Infinity; // a trap restarts the instance; the next call reloads the model
      this.recover(e);
      return -1;
    }
    return this.warmed % WARM_TOKENS.length === 0 ? 30 : 0;
  }

  /** Whether `callNow` can answer now. */
  readyNow() {
    return !this.queued && !!this.engine && this.generation === generation && !this.engine.hasGpu();
  }

  /** Runs `run` after everything queued before it. */
  enqueue(run) {
    this.queued++;
    const result = this.queue.then(run, run).finally(() => this.queued--);
    this.queue = result.catch(() => {});
    return result;
  }

  /** Runs one request; calls are answered in order, one at a time. */
  call(task, request) {
    this.warmed = Infinity;
    const run = async () => {
      if (!this.engine || this.generation !== generation) await this.load();
      try {
        const t0 = performance.now();
        const json = await this.run(task, request);
        return { value: JSON.parse(json), ...this.meta(t0) };
      } catch (e) {
        throw this.recover(e);
      }
    };
    return this.enqueue(run);
  }

  dispose() {
    if (this.generation === generation) this.engine?.free();
    this.engine = null;
  }

  /** Test hooks: `trap` and `trap-async` make the instance panic, `lose-device` destroys the
   * WebGPU device as a lost one would be. */
  debug(what) {
    const run = async () => {
      try {
        if (what === 'trap') glue.debugTrap();
        else if (what === 'trap-async') await guarded(glue.debugTrapAsync());
        else if (what === 'lose-device') this.engine?.debugLoseDevice();
        else if (what.startsWith('threads:')) return glue.setThreads(Number(what.slice(8)));
        else if (what.startsWith('profile:')) return JSON.parse(await guarded(this.engine.debugProfile(what.slice(8))));
        else throw new Error(`unknown debug hook ${what}`);
      } catch (e) {
        throw this.recover(e);
      }
    };
    return this.enqueue(run);
  }

  /**
   * After a trap the Rust state is undefined: start a fresh instance of the module; the model
   * is loaded again (from the Cache API or the same files) before the next call.
   */
  recover(e) {
    if (!(e instanceof WebAssembly.RuntimeError)) return asError(e);
    let why = e.message;
    try {
      why = glue.lastPanic() || why; // the trapped instance's memory still holds the panic message
    } catch {
      // keep the trap's own message
    }
    this.engine = null; // its memory belonged to the old instance; never free() it
    stopHelpers();
    glue.__wbg_reset_state();
    generation++;
    return new Error(`webert: internal error (${why}); the WebAssembly instance was restarted and the model will be reloaded on the next call`);
  }
}

function asError(e) {
  return e instanceof Error ? e : new Error(String(e));
}
