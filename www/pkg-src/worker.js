// The module worker that holds one model: messages from the page are handled in order, so
// calls sent while the model is still loading wait for it. Between messages, a worker whose model
// runs on the CPU warms it up (until its first call), then waits on the express lane (lane.js)
// where the page set one up.

import { Model } from './core.js';
import { errorFields, REFUSED, VALUE, WorkerLane } from './lane.js';

let model = null;
let queue = Promise.resolve();
let lane = null;
let handling = 0;

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

/** One express-lane request, `task \n request JSON`, answered at once or refused. */
function serve(message) {
  const cut = message.indexOf('\n');
  const task = message.slice(0, cut);
  if (task === 'debug:trap') return model?.readyNow() ? model.trapNow() : { kind: REFUSED, text: '' };
  const r = model?.callNow(task, message.slice(cut + 1));
  if (!r) return { kind: REFUSED, text: '' };
  const meta = `"ms":${r.ms},"backend":${JSON.stringify(r.backend)},"gpu_failure":${JSON.stringify(r.gpu_failure ?? null)}`;
  return { kind: VALUE, text: `{${meta},"value":${r.json}}` };
}

/** With no message to handle: the model's warm-up, a forward per task, then the lane. */
function idle(pause = 0) {
  setTimeout(() => {
    if (handling > 0) return;
    const next = model?.warmStep() ?? -1;
    if (next >= 0) idle(next);
    else if (lane && model?.readyNow()) lane.park();
  }, pause);
}

// A trap inside an async call is also thrown from a microtask; the call already failed with
// it (see core.js), so it must not reach the page as a worker error.
self.addEventListener('error', (e) => {
  if (/RuntimeError|unreachable/.test(e.message ?? '')) e.preventDefault();
});

self.onmessage = (e) => {
  const msg = e.data;
  if (msg.op === 'lane') {
    lane = new WorkerLane(msg.buffer, serve);
    lane.count();
    return;
  }
  lane?.count();
  handling++;
  queue = queue.then(async () => {
    try {
      const result = await handle(msg);
      self.postMessage({ id: msg.id, result });
    } catch (err) {
      self.postMessage({ id: msg.id, error: errorFields(err) });
    }
    if (--handling === 0) idle();
  });
};
