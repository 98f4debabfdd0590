// One loaded model where the computation happens (inside the worker, or in the calling thread):
// starts the WebAssembly module, builds the engine from the model's files, runs task requests
// one at a time, and replaces a trapped WebAssembly instance instead of staying dead.

import init, { ModelLoader, debugTrap, lastPanic, __wbg_reset_state } from './webert_wasm.js';
import { gatherFiles, isNode } from './files.js';
import { wasmUrl } from './simd.js';

let started;
// Bumped when a trapped instance is replaced: engines built before belong to the old one.
let generation = 0;

function startWasm(report) {
  started ??= (async () => {
    const url = wasmUrl();
    report?.({ stage: 'compile', file: url.pathname.split('/').pop(), bytes: 0, total: 0 });
    try {
      if (isNode) {
        const fsName = 'node:fs/promises'; // a variable, so that bundlers leave it alone
        const fs = await import(/* @vite-ignore */ fsName);
        await init({ module_or_path: await fs.readFile(url) });
      } else {
        await init({ module_or_path: url });
      }
    } catch (e) {
      started = undefined; // let a later pipeline try again
      throw new Error(`could not start webert's WebAssembly module from ${url.href}: ${e.message}`);
    }
  })();
  return started;
}

export class Model {
  /** @param source model folder URL, File[] / FileList, or name → bytes object */
  constructor(source, options = {}) {
    this.source = source;
    this.options = options;
    this.engine = null;
    this.info = null;
    this.queue = Promise.resolve();
  }

  /** Downloads or reads the files and builds the engine. `report` gets progress events. */
  async load(report) {
    await startWasm(report);
    const { origin, files } = await gatherFiles(this.source, this.options, report);
    this.options.signal?.throwIfAborted();
    if (typeof this.source !== 'string' && !(this.source instanceof URL)) {
      // Keep re-readable files for a reload after a trap: the given Files/Blobs, else copies as
      // Blobs (which may live outside the JS heap) so that the caller's buffers can be freed.
      this.source = Object.fromEntries(files.map((f) => [f.name, f.blob ?? new Blob([f.bytes])]));
    }
    const total = files.reduce((s, f) => s + f.bytes.byteLength, 0);
    report?.({ stage: 'compile', bytes: total, total });
    const loader = new ModelLoader(origin);
    for (const f of files) loader.add(f.name, f.bytes);
    files.length = 0;
    try {
      this.engine = loader.load();
      this.generation = generation;
    } catch (e) {
      throw this.recover(e);
    }
    this.info = JSON.parse(this.engine.info());
    report?.({ stage: 'ready', bytes: total, total });
    return this.info;
  }

  /** Runs one request; calls are answered in order, one at a time. */
  call(task, request) {
    const run = async () => {
      if (!this.engine || this.generation !== generation) await this.load();
      try {
        const t0 = performance.now();
        const json = this.engine.call(task, JSON.stringify(request));
        return { value: JSON.parse(json), ms: performance.now() - t0 };
      } catch (e) {
        throw this.recover(e);
      }
    };
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => {});
    return result;
  }

  dispose() {
    if (this.generation === generation) this.engine?.free();
    this.engine = null;
  }

  /** Makes the instance panic (tests of the recovery path). */
  trap() {
    const run = async () => {
      try {
        debugTrap();
      } catch (e) {
        throw this.recover(e);
      }
    };
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => {});
    return result;
  }

  /**
   * After a trap the Rust state is undefined: start a fresh instance of the module; the model
   * is loaded again (from the Cache API or the same files) before the next call.
   */
  recover(e) {
    if (!(e instanceof WebAssembly.RuntimeError)) return asError(e);
    let why = e.message;
    try {
      why = lastPanic() || why; // the trapped instance's memory still holds the panic message
    } catch {
      // keep the trap's own message
    }
    this.engine = null; // its memory belonged to the old instance; never free() it
    __wbg_reset_state();
    generation++;
    return new Error(`webert: internal error (${why}); the WebAssembly instance was restarted and the model will be reloaded on the next call`);
  }
}

function asError(e) {
  return e instanceof Error ? e : new Error(String(e));
}
