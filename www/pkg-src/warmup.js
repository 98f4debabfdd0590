// Warm-ups for a CPU engine: V8 runs WebAssembly unoptimized until a function has run a while,
// and optimizes it in the background, so the first forwards after a start are slow.

const IDLE_TOKENS = [7, 8, 9, 10, 11, 32];
const IDLE_ROUNDS = 3;
const IDLE_DELAY_MS = 100;
const PAUSE_MS = 30;

/**
 * A new helper of the threads build runs unoptimized for its first forwards, and the engine
 * waits on it: a few forwards at load, with pauses in which idle helpers return to their event
 * loop. Once per set of helpers (`HelperPool.warm`).
 */
export async function warmHelpers(engine, maxLength) {
  for (let i = 0; i < 4; i++) {
    engine.warmUp(2, Math.min(128, maxLength));
    await new Promise((r) => setTimeout(r, PAUSE_MS));
  }
}

/**
 * The forwards that idle time buys before a model's first call (the worker runs them between
 * messages): 7–11 tokens (whose last strips take every short tile) and 32, IDLE_ROUNDS times,
 * each forward short so that a call never waits long behind one.
 */
export class IdleWarmUp {
  constructor() {
    this.done = 0;
    this.from = 0;
  }

  /** The model has (re)loaded: a call right after loading should not wait behind a step. */
  loaded() {
    this.from = performance.now() + IDLE_DELAY_MS;
  }

  /** Calls warm the engine from the first one on. */
  stop() {
    this.done = Infinity;
  }

  /**
   * Runs the next forward on `engine` when due; returns the milliseconds to wait before the
   * next step (a pause for the optimizing compiler after each round), or -1 when done.
   */
  step(engine, maxLength) {
    if (this.done >= IDLE_ROUNDS * IDLE_TOKENS.length) return -1;
    const wait = this.from - performance.now();
    if (wait > 0) return wait;
    const tokens = IDLE_TOKENS[this.done++ % IDLE_TOKENS.length];
    engine.warmUp(1, Math.min(tokens, maxLength));
    return this.done % IDLE_TOKENS.length === 0 ? PAUSE_MS : 0;
  }
}
