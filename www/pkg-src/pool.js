// The Web Workers (thread.js) that help the threads build's CPU thread pool, sharing the
// instance's memory. They belong to that instance: a trap ends them with it.

const MAX_THREADS = 16;

export class HelperPool {
  constructor() {
    this.workers = [];
    // Whether they have run the warm-up forwards (warmup.js).
    this.warm = false;
  }

  /** Starts helpers until `threads` threads (the engine's own included) can work, as far as `glue`'s build allows; resolves to the count in force. */
  async use(glue, threads) {
    if (!glue.canThread() || threads <= 1) return glue.setThreads(1);
    const module = glue.sharedModule();
    const memory = glue.sharedMemory();
    const joining = [];
    while (this.workers.length < Math.min(threads, MAX_THREADS) - 1) {
      const worker = new Worker(new URL('./thread.js', import.meta.url), { type: 'module', name: `webert-thread-${this.workers.length + 1}` });
      this.workers.push(worker);
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
      while (glue.threadPoolHelpers() < this.workers.length && performance.now() < until) {
        await new Promise((r) => setTimeout(r, 1));
      }
    } catch (e) {
      console.warn(`webert: running on fewer threads: ${e.message}`);
    }
    return glue.setThreads(threads);
  }

  stop() {
    for (const w of this.workers) w.terminate();
    this.workers = [];
    this.warm = false;
  }
}
