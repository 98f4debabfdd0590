// The express lane between the page and the model's worker, where the page is cross-origin
// isolated: a call's request and result travel through a SharedArrayBuffer, the worker waits in
// `Atomics.wait` between calls and the page in `Atomics.waitAsync`, instead of a `postMessage`
// each way.
//
// One call at a time. The worker parks only when its message queue is empty, for up to
// PARK_MS after its last call (a parked worker's event loop does not run); every message the page
// posts counts in POSTED and wakes it, so it goes back to its event loop for them. A call that
// cannot take the lane (worker not parked, a message ahead of it, too large, a GPU engine, a model
// to reload) goes by message as before, so order is kept.

// Int32 slots of the control block
const STATE = 0; // who holds the data area, below
const POSTED = 1; // messages the page has posted to the worker
const LEN = 2; // bytes of the request or the result
const KIND = 3; // of the result, below

// STATE values
const AWAY = 0; // the worker runs its event loop
const PARKED = 1; // the worker waits for a request; the page may write one
const REQUEST = 2; // a request is written; the worker serves it
const DONE = 3; // a result is written; the page reads it, then hands back PARKED

// KIND values
export const VALUE = 0; // the call's `{ value, ms, backend, gpu_failure }` as JSON
export const ERROR = 1; // `{ name, message }` as JSON
export const REFUSED = 2; // not served here: the page sends the call by message
const BY_MESSAGE = 3; // a result too large for the area: it follows as a message `{ lane: text }`

const HEADER = 16;
const CAPACITY = 1 << 20;
const PARK_MS = 5000;

/**
 * A request for the lane: `op name` and a body, e.g. a call's task and its request JSON, which
 * the worker hands to the engine as it is.
 */
export function laneRequest(op, name, body = '') {
  return `${op} ${name}\n${body}`;
}

export function parseLaneRequest(text) {
  const space = text.indexOf(' ');
  const cut = text.indexOf('\n', space);
  return { op: text.slice(0, space), name: text.slice(space + 1, cut), body: text.slice(cut + 1) };
}

/** An error as the worker sends it to the page, by message or on the lane. */
export function errorFields(err) {
  return { name: err?.name ?? 'Error', message: err?.message ?? String(err) };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Whether this context can run the lane. */
export function laneSupported() {
  return typeof SharedArrayBuffer !== 'undefined' && globalThis.crossOriginIsolated === true &&
    typeof Atomics.waitAsync === 'function';
}

/** The page's end. `buffer` goes to the worker in its first message. */
export class PageLane {
  constructor() {
    this.buffer = new SharedArrayBuffer(HEADER + CAPACITY);
    this.ctrl = new Int32Array(this.buffer, 0, HEADER / 4);
    this.data = new Uint8Array(this.buffer, HEADER);
    this.busy = false;
    this.postedDuringCall = false;
    this.mailed = null; // a result the worker posted, or the resolver of one awaited
  }

  /** A `{ lane: text }` message from the worker. */
  delivered(text) {
    if (typeof this.mailed === 'function') this.mailed(text);
    else this.mailed = text;
  }

  /** To be called before each message posted to the worker. */
  posting() {
    Atomics.add(this.ctrl, POSTED, 1);
    Atomics.notify(this.ctrl, STATE);
    if (this.busy) this.postedDuringCall = true;
  }

  /**
   * Sends the request `message()` builds if the worker is parked: resolves to `{ kind, text }`,
   * or null at once when the call must go by message. `alive()` false stops waiting (the worker
   * is gone).
   */
  call(message, alive) {
    if (this.busy || Atomics.load(this.ctrl, STATE) !== PARKED) return null;
    const bytes = encoder.encode(message()); // (encodeInto refuses shared memory)
    if (bytes.length > CAPACITY) return null;
    this.data.set(bytes);
    Atomics.store(this.ctrl, LEN, bytes.length);
    if (Atomics.compareExchange(this.ctrl, STATE, PARKED, REQUEST) !== PARKED) return null;
    Atomics.notify(this.ctrl, STATE);
    this.busy = true;
    this.postedDuringCall = false;
    return (async () => {
      while (Atomics.load(this.ctrl, STATE) === REQUEST) {
        const wait = Atomics.waitAsync(this.ctrl, STATE, REQUEST, 1000);
        if (wait.async) await wait.value;
        if (!alive()) return null;
      }
      let kind = Atomics.load(this.ctrl, KIND);
      let text = decoder.decode(this.data.slice(0, Atomics.load(this.ctrl, LEN)));
      Atomics.store(this.ctrl, STATE, PARKED);
      // A worker with messages waiting stays parked until it sees the data area handed back.
      if (this.postedDuringCall) Atomics.notify(this.ctrl, STATE);
      if (kind === BY_MESSAGE) {
        text = typeof this.mailed === 'string' ? this.mailed : await new Promise((r) => (this.mailed = r));
        kind = VALUE;
      }
      this.mailed = null;
      this.busy = false;
      return { kind, text };
    })();
  }
}

/** The worker's end: `serve(message)` answers one request, synchronously, as `{ kind, text }`. */
export class WorkerLane {
  constructor(buffer, serve) {
    this.ctrl = new Int32Array(buffer, 0, HEADER / 4);
    this.data = new Uint8Array(buffer, HEADER);
    this.serve = serve;
    this.received = 0;
  }

  /** Counts a message from the page (each one the page counted in `posting`). */
  count() {
    this.received++;
  }

  /**
   * Waits for requests and serves them until a message arrives or PARK_MS pass without a
   * request; returns to the event loop then. Call with the worker's message queue empty.
   */
  park() {
    let deadline = performance.now() + PARK_MS;
    if (Atomics.compareExchange(this.ctrl, STATE, AWAY, PARKED) !== AWAY) return;
    for (;;) {
      const state = Atomics.load(this.ctrl, STATE);
      if (state === REQUEST) {
        this.answer();
        deadline = performance.now() + PARK_MS;
        continue;
      }
      const left = deadline - performance.now();
      const mail = Atomics.load(this.ctrl, POSTED) !== this.received;
      if (state === PARKED && (mail || left <= 0)) {
        if (Atomics.compareExchange(this.ctrl, STATE, PARKED, AWAY) === PARKED) return;
        continue; // a request came in between
      }
      // DONE: the page has not read the result yet; it hands the area back (notifying only when
      // it has posted messages since), so a late page is checked on now and then.
      Atomics.wait(this.ctrl, STATE, state, mail ? 50 : Math.max(left, 50));
    }
  }

  answer() {
    let result;
    try {
      const message = decoder.decode(this.data.slice(0, Atomics.load(this.ctrl, LEN)));
      result = this.serve(message);
    } catch (err) {
      result = { kind: ERROR, text: JSON.stringify(errorFields(err)) };
    }
    let { kind, text } = result;
    let bytes = encoder.encode(text);
    if (bytes.length > CAPACITY) {
      self.postMessage({ lane: text });
      kind = BY_MESSAGE;
      bytes = bytes.subarray(0, 0);
    }
    this.data.set(bytes);
    Atomics.store(this.ctrl, KIND, kind);
    Atomics.store(this.ctrl, LEN, bytes.length);
    Atomics.store(this.ctrl, STATE, DONE);
    Atomics.notify(this.ctrl, STATE);
  }
}
