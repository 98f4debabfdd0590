// The module worker that holds one model: messages from the page are handled in order, so
// calls sent while the model is still loading wait for it.

import { Model } from './core.js';

let model = null;
let queue = Promise.resolve();

async function handle({ id, op, source, options, task, request, what }) {
  const progress = (p) => self.postMessage({ id, progress: p });
  switch (op) {
    case 'load':
      model = new Model(source, options);
      return model.load(progress);
    case 'call':
      return model.call(task, request);
    case 'debug':
      return model.debug(what);
    default:
      throw new Error(`unknown worker message ${op}`);
  }
}

// A trap inside an async call is also thrown from a microtask; the call already failed with
// it (see core.js), so it must not reach the page as a worker error.
self.addEventListener('error', (e) => {
  if (/RuntimeError|unreachable/.test(e.message ?? '')) e.preventDefault();
});

self.onmessage = (e) => {
  const msg = e.data;
  queue = queue.then(async () => {
    try {
      const result = await handle(msg);
      self.postMessage({ id: msg.id, result });
    } catch (err) {
      self.postMessage({ id: msg.id, error: { name: err?.name ?? 'Error', message: err?.message ?? String(err) } });
    }
  });
};
