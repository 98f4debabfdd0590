// `redact(text, entities, options)`: the engine's own redaction (src/tasks/redact.rs), called
// synchronously on the WebAssembly module of this context. Models live in a Worker, so the page
// starts a module of its own for this: a token-classification pipeline does it while its model
// loads; without one, `await redact.ready()` first.

import { runtime } from './runtime.js';

const STYLES = ['type', 'mask', 'pseudonym'];
let started = null;

function glue() {
  if (!runtime.live) {
    throw new Error("webert: redact() needs webert's WebAssembly module, which a token-classification pipeline starts; without one, `await redact.ready()` first");
  }
  return runtime.glue;
}

function offset(e, key, i) {
  const v = e?.[key];
  if (!Number.isInteger(v) || v < 0) throw new TypeError(`entities[${i}].${key} must be a UTF-16 offset (a non-negative integer), got ${v}`);
  return v;
}

/** Redacts every entity (UTF-16 offsets, as `ner()` returns them) in `text`. */
export function redact(text, entities, options = {}) {
  if (typeof text !== 'string') throw new TypeError(`text must be a string, got ${text === null ? 'null' : typeof text}`);
  if (!Array.isArray(entities)) throw new TypeError('entities must be an array of { entity_group | entity | label, start, end }');
  const { style = 'type', mask } = options ?? {};
  if (!STYLES.includes(style)) throw new Error(`unknown redaction style "${style}"; use ${STYLES.map((s) => `'${s}'`).join(', ')}`);
  if (mask !== undefined && typeof mask !== 'string') throw new TypeError('mask must be a string');
  const list = entities.map((e, i) => {
    const label = e?.entity_group ?? e?.entity ?? e?.label;
    if (typeof label !== 'string') throw new TypeError(`entities[${i}] has no entity_group, entity or label`);
    return { label, start: offset(e, 'start', i), end: offset(e, 'end', i) };
  });
  // Lone surrogates would not survive UTF-8; U+FFFD keeps every UTF-16 offset where it was.
  const wellFormed = text.toWellFormed ? text.toWellFormed() : text;
  return glue().redact(wellFormed, JSON.stringify(list), JSON.stringify({ style, mask }));
}

/** Starts the module in this context (once); resolves when `redact()` can run. */
redact.ready = function ready() {
  if (runtime.live) return Promise.resolve();
  // The build an in-page pipeline may want later: the threads build where the page allows it
  // (it runs on one thread until a pipeline starts helpers).
  started ??= runtime.load(null, Infinity).then(() => undefined, (e) => {
    started = null;
    throw e;
  });
  return started;
};
