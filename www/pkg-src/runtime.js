// The WebAssembly module in this context (the model's worker, or the calling thread): which build
// starts, the thread helpers sharing its memory, and a fresh instance after a trap. One runtime
// per context, since wasm-bindgen's glue holds a single instance.

import { isNode } from './platform.js';
import { HelperPool } from './pool.js';
import { RELAXED_BUILD_URL, SIMD128_BUILD_URL, hasRelaxedSimd, missingRelaxedOps } from './simd.js';

/**
 * The adapter WebGPU gives this context, or null: `{ name, isFallbackAdapter }`, named as
 * readably as the browser allows. A fallback adapter (SwiftShader) emulates a GPU on the CPU.
 * Asked for as the engine asks (high performance), so that on a machine with two GPUs this is
 * the one the engine gets.
 */
export async function webgpuAdapter() {
  try {
    const gpu = typeof navigator !== 'undefined' && navigator.gpu;
    const adapter = gpu && (await gpu.requestAdapter({ powerPreference: 'high-performance' }));
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
function threadsPossible() {
  return !isNode && typeof Worker !== 'undefined' && typeof SharedArrayBuffer !== 'undefined' &&
    globalThis.crossOriginIsolated === true && hasRelaxedSimd();
}

/** Why a browser runs one thread where more were asked for (`info.threadsNote`). */
function oneThreadWhy() {
  if (globalThis.crossOriginIsolated !== true) return 'the page is not cross-origin isolated (COOP/COEP headers)';
  if (typeof SharedArrayBuffer === 'undefined') return 'this engine has no SharedArrayBuffer, even cross-origin isolated';
  if (typeof Worker === 'undefined') return 'no Web Workers here';
  if (!hasRelaxedSimd()) return 'the threads build needs relaxed SIMD';
  return null;
}

class Runtime {
  constructor() {
    this.started = null;
    // The wasm-bindgen glue of the build that runs (the threads build has its own).
    this.glue = null;
    this.helpers = new HelperPool();
    // Bumped when a trapped instance is replaced: engines built before belong to the old one.
    this.generation = 0;
    this.failPending = null;
    // Whether a build has started: its synchronous exports (redact) can be called.
    this.live = false;
    // Which build runs (`relaxed-simd`, `relaxed-simd threads` or `simd128`), and why a faster
    // one was not taken, for `info`.
    this.build = null;
    this.buildNote = null;
    // Why more than one thread was asked for and one runs (a browser without the means), or null.
    this.threadsNote = null;
  }

  /**
   * Starts the module once (the first caller's `threads` picks the build), then helpers until
   * `threads` threads share the CPU work as far as the build allows; resolves to the count.
   */
  async start(report, threads) {
    await this.load(report, threads);
    return this.helpers.use(this.glue, threads);
  }

  /** Starts the module once, without helpers (for `redact`); `threads` picks the build if first. */
  async load(report, threads) {
    this.started ??= this.startBuild(report, threads).catch((e) => {
      this.started = null; // let a later pipeline try again
      throw e;
    });
    await this.started;
  }

  async startBuild(report, threads) {
    // A panic inside an async (WebGPU) call traps in a microtask, where no promise sees it: the
    // panic hook calls this, which fails the pending call instead of leaving it hanging.
    globalThis.__webertPanic = (message) => this.failPending?.(new WebAssembly.RuntimeError(message));
    const notes = [];
    if (!hasRelaxedSimd()) {
      const missing = missingRelaxedOps();
      notes.push(missing.length === 20 ? 'no relaxed SIMD in this engine' : `this engine lacks relaxed-SIMD opcodes ${missing.join(', ')}`);
    }
    if (threads > 1 && !isNode && !threadsPossible()) this.threadsNote = `one thread: ${oneThreadWhy()}`;
    if (threads > 1 && threadsPossible()) {
      try {
        return await this.instantiate(report, 'relaxed-simd threads', notes);
      } catch (e) {
        // e.g. no room for a shared memory of this size: one thread still works
        console.warn(`webert: the threads build did not start (${e.message}); running on one thread`);
        notes.push(`the threads build did not start: ${e.message}`);
      }
    }
    if (hasRelaxedSimd()) {
      try {
        return await this.instantiate(report, 'relaxed-simd', notes);
      } catch (e) {
        // An engine that validates the probe and still rejects the build (an op set the probe
        // does not know): the simd128 build runs everywhere WebAssembly SIMD does.
        console.warn(`webert: the relaxed-SIMD build did not start (${e.message}); using the simd128 build`);
        notes.push(`the relaxed-SIMD build did not start: ${e.message}`);
      }
    }
    return this.instantiate(report, 'simd128', notes);
  }

  async instantiate(report, build, notes) {
    // Literal URLs and import paths, so that bundlers copy every build.
    const threaded = build === 'relaxed-simd threads';
    const url = threaded ? new URL('./webert_wasm_threads_bg.wasm', import.meta.url) : build === 'simd128' ? SIMD128_BUILD_URL() : RELAXED_BUILD_URL();
    report?.({ stage: 'compile', file: url.pathname.split('/').pop(), bytes: 0, total: 0 });
    try {
      this.glue = threaded ? await import('./webert_wasm_threads.js') : await import('./webert_wasm.js');
      if (isNode) {
        const fsName = 'node:fs/promises'; // a variable, so that bundlers leave it alone
        const fs = await import(/* @vite-ignore */ fsName);
        await this.glue.default({ module_or_path: await fs.readFile(url) });
      } else {
        await this.glue.default({ module_or_path: url });
      }
      this.live = true;
      this.build = build;
      this.buildNote = notes.length ? notes.join('; ') : null;
    } catch (e) {
      throw new Error(`could not start webert's WebAssembly module from ${url.href}: ${e.message}`);
    }
  }

  /** Awaits an async engine call; a trap while it runs rejects it with a RuntimeError. */
  guarded(promise) {
    return new Promise((resolve, reject) => {
      this.failPending = reject;
      promise.then(resolve, reject).finally(() => {
        if (this.failPending === reject) this.failPending = null;
      });
    });
  }

  /**
   * After the trap `e` the Rust state is undefined: starts a fresh instance of the module and
   * returns the error for the caller, whose engines are gone with the old instance.
   */
  restart(e) {
    let why = e.message;
    try {
      why = this.glue.lastPanic() || why; // the trapped instance's memory still holds the panic message
    } catch {
      // keep the trap's own message
    }
    this.helpers.stop();
    this.glue.__wbg_reset_state();
    this.generation++;
    return new Error(`webert: internal error (${why}); the WebAssembly instance was restarted and the model will be reloaded on the next call`);
  }
}

export const runtime = new Runtime();
