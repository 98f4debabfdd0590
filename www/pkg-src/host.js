// Where a pipeline's model lives, seen from the page: a module Web Worker (browsers), or the
// calling thread (Node, `worker: false`). Either way its Handler (handler.js) answers the
// messages; a host's `send(message, { onProgress, lane })` resolves to the answer, `fail(error)`
// ends it. `lane` builds the message as an express-lane request, for a call that may take it.

import { Handler } from './handler.js';
import { laneSupported, PageLane, REFUSED, VALUE } from './lane.js';

/** A pipeline's host, for the test entry point (testing.js). */
export const HOST = Symbol('webert host');

export class WorkerHost {
  constructor() {
    this.worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'webert' });
    this.next = 0;
    this.pending = new Map();
    this.worker.onmessage = ({ data }) => {
      if (data.lane !== undefined) return this.lane?.delivered(data.lane);
      const p = this.pending.get(data.id);
      if (!p) return;
      if (data.progress) return p.onProgress?.(data.progress);
      this.pending.delete(data.id);
      if (data.error) p.reject(errorFrom(data.error));
      else p.resolve(data.result);
    };
    this.worker.onerror = (e) => {
      e.preventDefault?.();
      this.fail(new Error(`webert worker failed: ${e.message || 'could not start (is worker.js served as JavaScript?)'}`));
    };
    this.lane = laneSupported() ? new PageLane() : null;
    // Calls the lane answered, and refused (sent on by message).
    this.laneStats = this.lane ? { answered: 0, refused: 0 } : null;
    if (this.lane) this.post({ laneBuffer: this.lane.buffer });
  }

  post(msg) {
    this.lane?.posting();
    this.worker.postMessage(msg);
  }

  send(msg, { onProgress, lane, signal } = {}) {
    if (this.dead) return Promise.reject(this.dead);
    // The lane only when nothing is ahead of the call.
    if (lane && this.lane && this.pending.size === 0) {
      const answer = this.lane.call(lane, () => !this.dead);
      if (answer) return this.fromLane(answer, msg, onProgress);
    }
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress });
      this.post({ ...msg, id });
      // The call rejects at once; the worker stops it before its next window.
      signal?.addEventListener('abort', () => {
        if (!this.pending.delete(id)) return;
        this.post({ abort: id });
        reject(signal.reason);
      }, { once: true });
    });
  }

  fromLane(answer, msg, onProgress) {
    return new Promise((resolve, reject) => {
      this.laneReject = reject; // for `fail`, while the lane has it
      answer.then((r) => {
        if (this.laneReject === reject) this.laneReject = null;
        if (this.dead) return reject(this.dead);
        this.laneStats[r.kind === REFUSED ? 'refused' : 'answered']++;
        if (r.kind === REFUSED) return this.send(msg, { onProgress }).then(resolve, reject);
        const value = JSON.parse(r.text);
        if (r.kind === VALUE) resolve(value);
        else reject(errorFrom(value));
      }).catch(reject);
    });
  }

  fail(err) {
    this.dead = err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    this.laneReject?.(err);
    this.worker.terminate();
  }
}

function errorFrom({ name, message }) {
  return Object.assign(new Error(message), { name: name ?? 'Error' });
}

export class LocalHost {
  constructor() {
    this.handler = new Handler();
    this.laneStats = null;
  }

  async send(msg, { onProgress, signal } = {}) {
    if (this.dead) throw this.dead;
    const id = (this.next = (this.next ?? 0) + 1);
    const answer = this.handler.handle({ ...msg, id }, onProgress);
    if (!signal) return answer;
    return new Promise((resolve, reject) => {
      const abort = () => {
        this.handler.abort(id);
        reject(signal.reason);
      };
      signal.addEventListener('abort', abort, { once: true });
      answer.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
    });
  }

  fail(err) {
    this.dead = err;
    // A packed-model image being written takes its chunks from the engine: it is freed after.
    const writing = this.handler.model?.background();
    if (writing) writing.finally(() => this.handler.dispose());
    else this.handler.dispose();
  }
}
