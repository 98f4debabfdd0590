// Where the model lives (its worker, or the calling thread): the one handler of what a pipeline
// asks, by message or, at once, on the express lane (lane.js).

import { runHook, runHookNow } from './hooks.js';
import { parseLaneRequest } from './lane.js';
import { Model } from './model.js';

export class Handler {
  constructor() {
    this.model = null;
    this.aborted = new Set(); // ids of watched calls the page gave up
  }

  /** Stops the watched call `id` before its next window (or before it starts). */
  abort(id) {
    this.aborted.add(id);
  }

  /** One message from the page; `progress` gets the load's progress events. */
  async handle({ op, id, source, options, task, request, watched, text, runs, hook, arg, features, labels, C, bytes }, progress) {
    switch (op) {
      case 'load':
        this.model = new Model(source, options);
        return this.model.load(progress);
      case 'call': {
        if (!watched) return this.model.call(task, request);
        const watch = {
          report: (done, total) => progress?.({ stage: 'windows', done, total }),
          aborted: () => this.aborted.has(id),
        };
        return this.model.call(task, request, watch).finally(() => this.aborted.delete(id));
      }
      case 'dispose':
        await this.model?.settled(); // a packed-model image being written (model.js)
        this.dispose();
        this.model = null;
        return null;
      case 'fit':
        return this.model.fit(features, labels, C);
      case 'head':
        return this.model.addHead(bytes);
      case 'profile':
        return this.model.profile(text);
      case 'roofline':
        return this.model.roofline(text, runs);
      case 'hook':
        return runHook(this.model, hook, arg);
      default:
        throw new Error(`unknown webert message ${op}`);
    }
  }

  /**
   * A lane request (`laneRequest`) answered at once: a call's `{ json, ms, backend, gpu_failure }`
   * with the engine's JSON text, or null when it must go by message.
   */
  handleNow(text) {
    if (!this.model?.readyNow()) return null;
    const { op, name, body } = parseLaneRequest(text);
    if (op === 'call') return this.model.callNow(name, body);
    if (op === 'hook') return runHookNow(this.model, name);
    return null;
  }

  dispose() {
    this.model?.dispose();
  }
}
