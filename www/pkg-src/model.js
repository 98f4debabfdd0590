// One loaded model where the computation happens: builds the engine from the model's files on
// WebGPU or the CPU, runs its calls one at a time in order, and loads it again after a trap
// restarted the WebAssembly instance.

import { gatherFiles } from './files.js';
import { openPackedCache, packedImages } from './packed-cache.js';
import { LAYOUT } from './layout.js';
import { isNode } from './platform.js';
import { defaultThreads, runtime, webgpuAdapter } from './runtime.js';
import { restoreTilings, saveTilings } from './tilings.js';
import { IdleWarmUp, warmHelpers } from './warmup.js';

export class Model {
  /** @param source model folder URL, File[] / FileList, or name → bytes object */
  constructor(source, options = {}) {
    this.source = source;
    this.options = options;
    this.engine = null;
    this.info = null;
    this.queue = Promise.resolve();
    this.queued = 0;
    this.idleWarmUp = new IdleWarmUp();
    /** Classifier head files added so far; an engine built again gets them in the same order. */
    this.heads = [];
  }

  /** Downloads or reads the files and builds the engine. `report` gets progress events. */
  async load(report) {
    const phases = new LoadPhases();
    const threads = Math.max(1, Math.floor(this.options.threads ?? defaultThreads()));
    // The module starts (compiles) while the files download: the list of files to fetch is the
    // engine's, generated into layout.js; only choosing among them (`pick`) needs the module.
    const started = phases.time('compile_ms', runtime.start(report, threads));
    started.catch(() => {}); // awaited below, after the files or when a choice needs it
    const layout = {
      ...LAYOUT,
      ready: started,
      pick: (origin, names, dtype) => JSON.parse(runtime.glue.pickModelFiles(origin, JSON.stringify(names), dtype ?? undefined)),
    };
    const device = this.options.device ?? 'auto';
    const allowFallback = !!this.options.allowFallbackAdapter;
    const quantized = this.options.quantized ?? 'int';
    const adapterFound = device === 'cpu' ? Promise.resolve(null) : webgpuAdapter();
    // A packed-model image serves a load that will run on the CPU (packed-cache.js).
    const imagesFor = async (root, opts) => {
      const adapter = await adapterFound;
      const cpuOnly = device === 'cpu' || (device === 'auto' && (!adapter || (adapter.isFallbackAdapter && !allowFallback)));
      const cache = cpuOnly ? await openPackedCache(opts) : null;
      return cache && packedImages(cache, root, quantized);
    };
    this.engine = null; // a reload after a trap: the old one belonged to the old instance
    let gathered = await this.gather({ ...this.options, packedImages: imagesFor }, report, layout, phases, started);
    const { glue } = runtime;
    let fromImage = null;
    if (gathered.image) {
      try {
        const bytes = gathered.files.reduce((s, f) => s + f.bytes.byteLength, gathered.image.byteLength);
        report?.({ stage: 'compile', bytes, total: bytes });
        const loader = this.loader(gathered);
        this.engine = loader.loadImage(gathered.image, quantized);
        this.generation = runtime.generation;
        fromImage = 'read';
      } catch (e) {
        if (e instanceof WebAssembly.RuntimeError) throw this.recover(e);
        // Another build's image, or a damaged one: load the files, and write it anew.
        await gathered.images.cache.delete(gathered.images.url);
        fromImage = `refused (${e.message})`;
        gathered = await this.gather({ ...this.options, packedImages: imagesFor }, report, layout, phases, started);
      }
      gathered.image = null;
    }
    const { files, forget, cacheError, written, stored, imageOf = [] } = gathered;
    // An image is looked up by the files' cached list and hashes: none unless they all are.
    const images = stored ? gathered.images : null;
    const total = files.reduce((s, f) => s + f.bytes.byteLength, 0);
    const names = [...files.map((f) => f.name), ...imageOf].sort();
    let storeImage = null;
    let adapter = null;
    let savedTilings = 0;
    if (!this.engine) {
      // The image's key is taken from the files now, before they go to the engine.
      storeImage = images?.store(new Map(files.map((f) => [f.name, f.bytes])));
      report?.({ stage: 'compile', bytes: total, total });
      const loader = this.loader(gathered);
      phases.lap('copy_ms');
      if (this.options.gpuWeights != null) loader.setGpuWeights(String(this.options.gpuWeights));
      if (this.options.gpuTilings != null) loader.setGpuTilings(String(this.options.gpuTilings));
      files.length = 0;
      adapter = await adapterFound;
      // `upload` covers setting WebGPU up and, under auto, timing it against the CPU.
      if (adapter && (device === 'webgpu' || allowFallback || !adapter.isFallbackAdapter)) report?.({ stage: 'upload', bytes: total, total });
      savedTilings = adapter && this.options.gpuTilings !== 'rule' ? await restoreTilings(glue, adapter.name, this.options) : 0;
      try {
        this.engine = await runtime.guarded(loader.load(device, allowFallback, this.options.probe !== false, quantized));
        this.generation = runtime.generation;
      } catch (e) {
        await forget?.().catch(() => {});
        throw this.recover(e);
      }
    }
    phases.lap('build_ms');
    this.info = JSON.parse(this.engine.info());
    this.info.files = names;
    if (fromImage) this.info.packedImage = fromImage;
    if (cacheError) this.info.cacheError = cacheError;
    // For the page, which checks that the browser kept them (cache.js `checkKept`); not kept in `info`.
    if (written?.length) this.written = written;
    this.info.wasmBuild = runtime.build;
    if (runtime.buildNote) this.info.wasmBuildNote = runtime.buildNote;
    if (runtime.threadsNote && threads > 1) this.info.threadsNote = runtime.threadsNote;
    for (const head of this.heads) this.engine.addHead(head);
    this.info.threads = this.engine.hasGpu() ? 1 : await started;
    if (this.info.threads > 1 && !runtime.helpers.warm) {
      await warmHelpers(this.engine, this.info.max_length);
      runtime.helpers.warm = true;
    }
    if (this.engine.hasGpu() && adapter) {
      this.adapterName = adapter.name;
      this.info.adapter = adapter.name + (adapter.isFallbackAdapter ? ' (fallback adapter)' : '');
      this.info.savedGpuTilings = savedTilings;
      await this.saveTilings(); // the probe's forward may have timed some
    }
    phases.lap('warm_ms');
    const { load_times: inBuild, ...info } = this.info;
    this.info = info;
    this.info.loadPhases = { ...phases.done(), build: inBuild };
    report?.({ stage: 'ready', bytes: total, total });
    this.idleWarmUp.loaded();
    // The image is written after the load has answered (its parts taken between calls).
    if (storeImage && !this.engine.hasGpu()) this.writeImage(storeImage);
    const cacheWritten = this.written;
    this.written = null;
    return cacheWritten ? { ...this.info, cacheWritten } : this.info;
  }

  /** The files, gathered with `opts`, after the module has started (their phases timed). */
  async gather(opts, report, layout, phases, started) {
    const gathered = phases.time('files_ms', gatherFiles(this.source, opts, report, layout));
    gathered.catch(() => {});
    const [, result] = await Promise.all([started, gathered]);
    this.options.signal?.throwIfAborted();
    phases.lap('start_and_files_ms');
    // A browser's download that is not all in the Cache API (caching off or refused) is kept too.
    const refetch = result.stored === false && !isNode;
    if ((typeof this.source !== 'string' && !(this.source instanceof URL)) || refetch) {
      // Keep re-readable files for a reload after a trap: the given Files/Blobs, else copies as
      // Blobs (which may live outside the JS heap) so that the caller's buffers can be freed.
      this.source = Object.fromEntries(result.files.map((f) => [f.name, f.blob ?? new Blob([f.bytes])]));
      this.options = { ...this.options, hub: undefined, weights: undefined, dtype: undefined };
    }
    return result;
  }

  /** A module-side loader holding `gathered`'s files, with the load's memory budget. */
  loader({ origin, files }) {
    const loader = new runtime.glue.ModelLoader(origin);
    for (const f of files) loader.add(f.name, f.bytes);
    if (this.options.memoryBudget != null) loader.setMemoryBudget(this.options.memoryBudget);
    return loader;
  }

  /**
   * Writes the packed-model image (`store` from packed-cache.js), streamed: each chunk is copied
   * out of the engine in the model's queue, between calls; the digests and the write go on
   * beside them.
   */
  writeImage(store) {
    let cursor = null;
    const generation = runtime.generation;
    const taken = this.enqueue(async () => {
      if (this.live && !this.engine.hasGpu()) cursor = this.engine.imageCursor();
    });
    const image = {
      length: () => cursor.length,
      done: () => cursor.done,
      next: (max) =>
        this.enqueue(async () => {
          if (!this.live || runtime.generation !== generation) throw new Error('the model was unloaded');
          return this.engine.imageChunk(cursor, max);
        }),
    };
    const writing = taken.then(async () => {
      if (!cursor) return;
      try {
        await store(image);
      } catch (e) {
        // A refused write (quota, private mode) only costs a slower load next time.
        console.warn(`webert: the packed-model image of this model was not stored (${e?.name ?? 'Error'}: ${e?.message ?? e}); the next load imports and packs the weights again`);
      } finally {
        // After a trap the instance's memory was reset, and the cursor with it.
        if (runtime.generation === generation) cursor.free();
      }
    }, () => {});
    const done = writing.finally(() => {
      if (this.imageWriting === done) this.imageWriting = null;
    });
    this.imageWriting = done;
  }

  /** Work of this model going on between calls (an image being written), or null. */
  background() {
    return this.imageWriting ?? null;
  }

  /** Whether the engine is there and belongs to the running instance. */
  get live() {
    return !!this.engine && this.generation === runtime.generation;
  }

  /**
   * Runs one request; calls are answered in order, one at a time. With `watch`
   * (`{ report(done, total), aborted() }`) the call reports its windows and stops between two
   * when `aborted()` says so; it runs asynchronously, so that the event loop (an abort message)
   * turns between windows.
   */
  call(task, request, watch = null) {
    this.idleWarmUp.stop();
    return this.enqueue(async () => {
      if (watch?.aborted()) throw new DOMException('the call was aborted', 'AbortError');
      if (!this.live) await this.load();
      const t0 = performance.now();
      const json = JSON.stringify(request);
      let result;
      if (watch) {
        const between = (done, total) => {
          watch.report(done, total);
          return new Promise((ok) => setTimeout(() => ok(!watch.aborted()), 0));
        };
        result = await runtime.guarded(this.engine.callWatched(task, json, between));
      } else {
        result = this.engine.hasGpu() ? await runtime.guarded(this.engine.call(task, json)) : this.engine.callSync(task, json);
      }
      return { value: JSON.parse(result), ...this.meta(t0) };
    });
  }

  /**
   * `call` done at once, for a CPU engine that is ready with nothing queued (the worker's express
   * lane): the result with the engine's JSON text as `json`, or null where `call` must be used.
   */
  callNow(task, requestJson) {
    if (!this.readyNow()) return null;
    this.idleWarmUp.stop();
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

  /** Fits a classifier head on features (Float32Array, one row per label): the head file's bytes. */
  fit(features, labels, C) {
    return this.enqueue(async () => {
      if (!this.live) await this.load();
      const t0 = performance.now();
      const bytes = this.engine.fitHead(features, JSON.stringify(labels), C);
      return { bytes, ms: performance.now() - t0 };
    });
  }

  /** Checks a head file against this encoder and keeps it: `{ id, head }`. */
  addHead(bytes) {
    return this.enqueue(async () => {
      if (!this.live) await this.load();
      const info = JSON.parse(this.engine.addHead(bytes));
      this.heads.push(bytes);
      return info;
    });
  }

  /** Milliseconds per GPU kernel or per kind of CPU op of one forward over `text`. */
  profile(text) {
    return this.enqueue(async () => {
      if (!this.live) await this.load();
      return JSON.parse(await runtime.guarded(this.engine.profile(text)));
    });
  }

  /** How near this machine's limits CPU forwards over `text` run (null on a GPU). */
  roofline(text, runs) {
    return this.enqueue(async () => {
      if (!this.live) await this.load();
      return JSON.parse(await runtime.guarded(this.engine.roofline(text, runs)));
    });
  }

  /** Whether `callNow` can answer now. */
  readyNow() {
    return !this.queued && this.live && !this.engine.hasGpu();
  }

  /** The idle warm-up's next step (warmup.js): milliseconds until the one after, or -1 when done. */
  warmStep() {
    if (!this.readyNow()) return -1;
    try {
      return this.idleWarmUp.step(this.engine, this.info.max_length);
    } catch (e) {
      this.idleWarmUp.stop(); // a trap restarts the instance; the next call reloads the model
      this.recover(e);
      return -1;
    }
  }

  /** Runs `work` after everything queued before it; a trap in it restarts the instance. */
  enqueue(work) {
    const run = async () => {
      try {
        const result = await work();
        await this.saveTilings();
        return result;
      } catch (e) {
        throw this.recover(e);
      }
    };
    this.queued++;
    const result = this.queue.then(run, run).finally(() => this.queued--);
    this.queue = result.catch(() => {});
    return result;
  }

  /** Stores GEMM tilings the GPU timed since the last store (tilings.js). */
  async saveTilings() {
    if (this.live && this.engine.hasGpu() && this.adapterName != null) {
      await saveTilings(runtime.glue, runtime.generation, this.adapterName, this.options);
    }
  }

  /** Resolves once everything queued so far has run and the image being written is kept. */
  settled() {
    return Promise.all([this.queue, this.imageWriting]);
  }

  dispose() {
    if (this.live) this.engine.free();
    this.engine = null;
  }

  /**
   * `e` as an Error; after a trap, the instance is restarted (its Rust state is undefined) and
   * the model is loaded again, from the Cache API or the same files, before the next call.
   */
  recover(e) {
    if (!(e instanceof WebAssembly.RuntimeError)) return e instanceof Error ? e : new Error(String(e));
    this.engine = null; // its memory belonged to the old instance; never free() it
    return runtime.restart(e);
  }
}

/** Where a load's time goes, in milliseconds per phase, for `info.loadPhases`. */
class LoadPhases {
  constructor() {
    this.start = performance.now();
    this.last = this.start;
    this.phases = {};
  }

  /** Records how long `promise` takes from now as `name`, for phases that overlap others. */
  time(name, promise) {
    const t0 = performance.now();
    this.phases[name] = null; // its place in the order: when it started
    return promise.then((v) => {
      this.phases[name] = Math.round((performance.now() - t0) * 10) / 10;
      return v;
    });
  }

  lap(name) {
    const now = performance.now();
    this.phases[name] = Math.round((now - this.last) * 10) / 10;
    this.last = now;
  }

  done() {
    // `began_at` (epoch ms) lets the page tell the worker's start from the messages.
    return { ...this.phases, total_ms: Math.round((this.last - this.start) * 10) / 10, began_at: performance.timeOrigin + this.start };
  }
}
