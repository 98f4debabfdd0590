// transformers.js's load progress events, made from webert's own: per file `initiate`,
// `download`, `progress` (with `progress_total` over every file after it) and `done`, then
// `ready`, with its field names, so that a progress bar written for transformers.js moves.

/**
 * A handler of webert's load events that also calls `callback` with transformers.js's events for
 * model `name` and `task`; webert's own events go to `callback` as well (they have `stage`, not
 * `status`, so transformers.js code passes over them).
 */
export function withTransformersEvents(callback, name, task) {
  const files = new Map(); // file → { loaded, total, done }
  const percent = (loaded, total) => (total ? (100 * loaded) / total : 0);
  const finish = (file, f) => {
    if (f.done) return;
    f.done = true;
    callback({ status: 'done', name, file });
  };
  const total = () => {
    let [loaded, size] = [0, 0];
    for (const f of files.values()) {
      loaded += f.loaded;
      size += f.total;
    }
    const each = Object.fromEntries([...files].map(([file, f]) => [file, { loaded: f.loaded, total: f.total }]));
    callback({ status: 'progress_total', name, progress: percent(loaded, size), loaded, total: size, files: each });
  };
  return (event) => {
    if (event.stage === 'download' && event.file) {
      const { file } = event;
      let f = files.get(file);
      if (!f) {
        f = { loaded: 0, total: 0, done: false };
        files.set(file, f);
        callback({ status: 'initiate', name, file });
        callback({ status: 'download', name, file });
      }
      f.loaded = event.fileBytes ?? f.loaded;
      f.total = Math.max(event.fileTotal ?? 0, f.loaded);
      callback({ status: 'progress', name, file, progress: percent(f.loaded, f.total), loaded: f.loaded, total: f.total });
      total();
      if (event.cached || (f.total > 0 && f.loaded >= f.total)) finish(file, f);
    } else if ((event.stage === 'compile' && event.bytes > 0) || event.stage === 'ready') {
      // The model's build (not the WebAssembly module's start, which has no bytes): every file is in.
      for (const [file, f] of files) finish(file, f);
    }
    callback(event);
    if (event.stage === 'ready') callback({ status: 'ready', task, model: name });
  };
}
