// Which of a model folder's files the engine reads: config, tokenizer and one set of weights,
// chosen by the caller's `weights` / `dtype` or as transformers.js chooses.

import { isNode } from './platform.js';

// Which files to read comes from the engine (`modelFiles()`, generated into layout.js so that
// downloads start before the module does), as a layout `{ required, text, weights, dtypes }`:
// the files a folder must have, the text files read when present, and the weight files in the
// engine's order of preference; `layout.pick` (the module's choice) once `layout.ready`.

/**
 * The files of `names` that the engine needs: config, tokenizer, and one set of weights (the
 * file `opts.weights`, else the engine's choice for `opts.dtype`: `layout.pick`).
 */
export function pickFiles(origin, names, opts, layout, config = null) {
  const { weights } = opts;
  if (!weights) {
    const preferred = defaultDtype(opts, config, layout);
    const has = preferred && names.includes(layout.dtypes[preferred]);
    return layout.pick(origin, names, opts.dtype ?? (has ? preferred : undefined));
  }
  const has = new Set(names);
  for (const r of layout.required) {
    if (!has.has(r)) throw new Error(`the model folder has no ${r} (found: ${names.join(', ') || 'nothing'})`);
  }
  if (!has.has(weights)) throw new Error(`the model folder has no ${weights}`);
  return [...layout.text.filter((n) => has.has(n)), weights];
}

/**
 * The weights to look for first when the caller gave no dtype, as transformers.js chooses:
 * the model's own `transformers.js_config.dtype` in config.json, else q8 in a browser (where a
 * download's size counts) and the most accurate present in Node or on WebGPU (null).
 */
export function defaultDtype(opts, config, layout) {
  if (opts.dtype != null || opts.weights != null) return null;
  const own = config?.['transformers.js_config']?.dtype;
  const named = typeof own === 'string' ? own : own?.model;
  if (named && named !== 'auto' && named in layout.dtypes) return named;
  return isNode || opts.device === 'webgpu' ? null : 'q8';
}

/** config.json's object from the gathered bytes, or null. */
export function configOf(bytes) {
  try {
    return bytes ? JSON.parse(new TextDecoder().decode(bytes)) : null;
  } catch {
    return null;
  }
}
