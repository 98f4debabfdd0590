import type { PipelineByTask } from './webert.js';

/** Hooks into a pipeline for webert's own tests and profiling scripts. */
export interface TestHooks {
  /**
   * Makes the WebAssembly instance panic, to test recovery: rejects with the error a call gets
   * after a trap, and the next call reloads the model. Takes the express lane when a call would.
   */
  trap(): Promise<void>;
  /** As `trap`, inside an async call (how a WebGPU call would trap). */
  trapAsync(): Promise<void>;
  /** Destroys the WebGPU device as a lost device would be, to test the fallback to the CPU. */
  loseDevice(): Promise<void>;
  /**
   * Destroys the WebGPU device right after the submission that follows `after` more (default
   * 0: the next call's first batch), with that batch in flight: a loss in the middle of a call.
   */
  loseDeviceDuringCall(after?: number): Promise<void>;
  /** Makes the next call's forward pass panic: a trap inside a call, which fails that call only. */
  trapInNextCall(): Promise<void>;
  /** Bytes of the model's WebAssembly memory now. */
  wasmMemory(): Promise<number>;
  /** Sets the thread count of the model's WebAssembly instance; resolves to the count in force. */
  threads(n: number): Promise<number>;
  /**
   * Whether the CPU's f32 GEMMs prefetch the weights ahead and how that was chosen, e.g.
   * `off, timed: 0.82 of the time without` (WebAssembly times it in the first forwards).
   */
  weightPrefetch(): Promise<string>;
  /** Sets that choice for every model of the instance (`undefined`: back to the default), to measure both. */
  setWeightPrefetch(on?: boolean): Promise<void>;
  /**
   * Calls the worker's express lane answered, and refused (those went on by message), on a
   * cross-origin isolated page; null where there is no lane (no worker, not isolated).
   */
  laneStats(): { answered: number; refused: number } | null;
}

/**
 * The test hooks of a pipeline. `trap`, `trapAsync` and `loseDevice` need a package built with
 * the cargo feature `test-hooks` (`WEBERT_WEB_FEATURES=test-hooks bash scripts/build_web.sh`);
 * without it they reject with an error that says so. Throws a TypeError for anything but a
 * pipeline.
 */
export function testHooks(pipe: PipelineByTask[keyof PipelineByTask]): TestHooks;
