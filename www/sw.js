// Keeps the demo working offline: the page, its code and the .wasm are answered from the network
// when it is there and from this cache when not. Model files are cached by the webert package
// itself (Cache API), so /models/ is left alone here.
const CACHE = 'webert-demo-v1';
const SHELL = [
  './', 'index.html', 'app.js', 'style.css',
  'demo/action.js', 'demo/bars.js', 'demo/cls-mode.js', 'demo/cls.js', 'demo/code.js',
  'demo/defaults.js', 'demo/dom.js', 'demo/dtype.js', 'demo/errors.js', 'demo/hub.js',
  'demo/latency.js', 'demo/load.js', 'demo/loaders.js', 'demo/ner.js', 'demo/open.js',
  'demo/outputs.js', 'demo/progress.js', 'demo/qa.js', 'demo/settings.js', 'demo/sim.js',
  'demo/state.js',
  'pkg/webert.js', 'pkg/tasks.js', 'pkg/sharing.js', 'pkg/packed-cache.js', 'pkg/host.js', 'pkg/lane.js', 'pkg/worker.js', 'pkg/handler.js', 'pkg/model.js',
  'pkg/hooks.js', 'pkg/redact.js', 'pkg/runtime.js', 'pkg/pool.js', 'pkg/warmup.js', 'pkg/files.js', 'pkg/file-choice.js', 'pkg/sha256.js', 'pkg/local-files.js', 'pkg/urls.js', 'pkg/download.js', 'pkg/from-url.js', 'pkg/cache.js', 'pkg/tilings.js', 'pkg/watchdog.js', 'pkg/env.js', 'pkg/teach.js', 'pkg/tensor.js', 'pkg/progress.js', 'pkg/options.js', 'pkg/simd.js', 'pkg/platform.js', 'pkg/disk-cache.js', 'pkg/sniff.js', 'pkg/layout.js', 'pkg/webert_wasm.js',
  'pkg/webert_wasm_bg.wasm', 'pkg/webert_wasm_relaxed_bg.wasm',
  // the threads build, which machines with 4 or more cores start on this (isolated) page
  'pkg/thread.js', 'pkg/webert_wasm_threads.js', 'pkg/webert_wasm_threads_bg.wasm',
];

self.addEventListener('install', (e) => {
  e.waitUntil(caches.open(CACHE).then((c) => c.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));

self.addEventListener('fetch', (e) => {
  const url = new URL(e.request.url);
  if (e.request.method !== 'GET' || url.origin !== location.origin || url.pathname.includes('/models/')) return;
  e.respondWith((async () => {
    const cache = await caches.open(CACHE);
    try {
      const res = await fetch(e.request);
      if (res.ok) await cache.put(e.request, res.clone());
      return res;
    } catch (err) {
      const hit = await cache.match(e.request, { ignoreSearch: true });
      if (hit) return hit;
      throw err;
    }
  })());
});
