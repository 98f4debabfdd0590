// A helper thread of the threads build: it instantiates the module on the engine's shared memory
// and then works for the engine's CPU thread pool inside WebAssembly, coming back to this event
// loop when idle, so that the worker is never blocked for good. The engine terminates it with the
// instance.

import { initSync, threadPoolHelper } from './webert_wasm_threads.js';

self.onmessage = ({ data: { module, memory } }) => {
  try {
    initSync({ module, memory });
  } catch (e) {
    self.postMessage({ error: `a webert thread could not start the module: ${e.message}` });
    return;
  }
  self.postMessage({ joined: true });
  const help = () => {
    if (threadPoolHelper()) setTimeout(help, 0);
  };
  help();
};
