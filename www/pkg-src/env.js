// Model ids (`ORG/NAME`) as transformers.js takes them: `env` says where ids are looked up, and
// `resolveModel` turns a model argument into a folder URL or path, or an id's places.

import { isNode } from './platform.js';

/** Where model ids are fetched from; the names and meanings of transformers.js's `env`. */
export const env = {
  /** The host of model ids (the Hugging Face Hub, or a mirror with its URL layout). */
  remoteHost: 'https://huggingface.co',
  /** An id's folder on `remoteHost`; `{model}` is the id, `{revision}` the revision. */
  remotePathTemplate: '{model}/resolve/{revision}/',
  /** `false`: ids are never fetched from `remoteHost`. */
  allowRemoteModels: true,
  /** Look for an id under `localModelPath` first (default: in Node only, as transformers.js). */
  allowLocalModels: isNode,
  /** Where local copies of ids live: a URL path on the page's site, or a directory in Node. */
  localModelPath: '/models/',
  /** `false`: pipelines default to `cache: false` (no Cache API). */
  useBrowserCache: true,
  /** Node: where model ids' files are kept (the CLI's layout: pass the same folder as its
   * `--cache-dir` to share them); default, as transformers.js, `.cache/` in the package's folder. */
  cacheDir: isNode ? import.meta.url.replace(/[^/]*$/, '.cache/') : null,
  /** Node: `false` keeps nothing on disk. */
  useFSCache: isNode,
  /** Browsers: how long a disposed pipeline's worker, its model dropped, waits for the next
   * pipeline (which then skips starting a worker and its WebAssembly module); 0 ends it at
   * `dispose()`, and a worker already waiting at the next load. Its WebAssembly memory, which cannot shrink, stays reserved meanwhile. */
  spareWorkerMs: 5000,
  /** transformers.js's ONNX Runtime settings; `onnx.wasm.numThreads` is the default `threads`. */
  backends: { onnx: { wasm: {}, webgpu: {} } },
};

const HUB_URL = /^(?:https:\/\/)?(?:www\.)?(?:huggingface\.co|hf\.co)\/([\w.-]+\/[\w.-]+)(?:\/(?:tree|resolve)\/([^/]+))?\/?$/;
const ID = /^[A-Za-z0-9][\w.-]*(?:\/[A-Za-z0-9][\w.-]*)?$/;

const slash = (s) => (s.endsWith('/') ? s : `${s}/`);

/**
 * A model argument resolved on the page: `{ source }` for a folder URL or path (or files), or
 * `{ source, hub }` for a model id, where `source` is the id's folder on the remote host and
 * `hub` says where else to look (`path`: the argument as a Node directory; `local`: the id under
 * `env.localModelPath`). A folder URL ends with `/` or starts with `/`, `./`, `../` or a scheme;
 * a Hub URL (`https://huggingface.co/ORG/NAME`) is its id.
 */
export function resolveModel(model, revision = 'main') {
  if (typeof model !== 'string' && !(model instanceof URL)) return { source: model };
  const s = String(model);
  const hubUrl = s.match(HUB_URL);
  const id = hubUrl ? hubUrl[1] : ID.test(s) && !s.includes('..') ? s : null;
  if (!id) return { source: model };
  const rev = hubUrl?.[2] ? decodeURIComponent(hubUrl[2]) : revision;
  if (typeof rev !== 'string' || !rev) throw new Error(`revision must be a branch, tag or commit name, got ${rev}`);
  const path = env.remotePathTemplate.replaceAll('{model}', id).replaceAll('{revision}', encodeURIComponent(rev));
  const remote = new URL(slash(path.replace(/^\//, '')), slash(String(env.remoteHost))).href;
  let local = null;
  if (env.allowLocalModels && env.localModelPath) {
    local = slash(String(env.localModelPath)) + id + '/';
    if (!isNode && typeof location !== 'undefined') local = new URL(local, location.href).href;
  }
  const label = `model ${id} (revision ${rev}) on ${new URL(remote).origin}`;
  return { source: remote, hub: { id, revision: rev, path: isNode && !hubUrl ? s : null, local, remote: env.allowRemoteModels !== false, label } };
}
