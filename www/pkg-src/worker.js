// The module worker that holds one model: messages from the page go to its handler in order, so
// calls sent while the model is still loading wait for it. Between messages, a worker whose model
// runs on the CPU warms it up (until its first call), then waits on the express lane (lane.js)
// where the page set one up.

import { Handler } from './handler.js';
import { errorFields, REFUSED, VALUE, WorkerLane } from './lane.js';

const handler = new Handler();
let lane = null;
let queue = Promise.resolve();
let handling = 0;

/** One express-lane request, answered at once or refused. */
function serve(text) {
  const r = handler.handleNow(text);
  if (!r) return { kind: REFUSED, text: '' };
  const meta = `"ms":${r.ms},"backend":${JSON.stringify(r.backend)},"gpu_failure":${JSON.stringify(r.gpu_failure ?? null)}`;
  return { kind: VALUE, text: `{${meta},"value":${r.json}}` };
}

/** With no message to handle: the model's warm-up, a forward per task, then the lane. */
function idle(pause = 0) {
  setTimeout(() => {
    if (handling > 0) return;
    const model = handler.model;
    const next = model?.warmStep() ?? -1;
    const background = model?.background();
    if (next >= 0) idle(next);
    // A parked worker's event loop does not run: not while an image is being written.
    else if (background) background.then(() => idle());
    else if (lane && model?.readyNow()) lane.park();
  }, pause);
}

// A trap inside an async call is also thrown from a microtask; the call already failed with
// it (see runtime.js), so it must not reach the page as a worker error.
self.addEventListener('error', (e) => {
  if (/RuntimeError|unreachable/.test(e.message ?? '')) e.preventDefault();
});

self.onmessage = ({ data }) => {
  if (data.laneBuffer) {
    lane = new WorkerLane(data.laneBuffer, serve);
    lane.count();
    return;
  }
  lane?.count();
  if (data.abort !== undefined) return handler.abort(data.abort); // not queued: the call is running
  handling++;
  const progress = (p) => self.postMessage({ id: data.id, progress: p });
  queue = queue.then(async () => {
    try {
      self.postMessage({ id: data.id, result: await handler.handle(data, progress) });
    } catch (err) {
      self.postMessage({ id: data.id, error: errorFields(err) });
    }
    if (--handling === 0) idle();
  });
};
