// The hooks of the test entry point (testing.js), run where the model lives. The trap and
// device-loss hooks call wasm exports that only a build with the cargo feature `test-hooks` has.

import { runtime } from './runtime.js';

const MISSING = 'webert/testing: this build of webert has no test hooks; build the package with the cargo feature ' +
  '`test-hooks` (WEBERT_WEB_FEATURES=test-hooks bash scripts/build_web.sh)';

function need(owner, name) {
  if (typeof owner?.[name] !== 'function') throw new Error(MISSING);
}

/** Runs the hook `name` after the model's queued calls; resolves to what it returns. */
export function runHook(model, name, arg) {
  return model.enqueue(async () => {
    switch (name) {
      case 'trap':
        need(runtime.glue, 'debugTrap');
        return runtime.glue.debugTrap();
      case 'trap-async':
        need(runtime.glue, 'debugTrapAsync');
        return runtime.guarded(runtime.glue.debugTrapAsync());
      case 'lose-device':
        need(runtime.glue.WebEngine.prototype, 'debugLoseDevice');
        return model.engine?.debugLoseDevice();
      case 'lose-device-during-call':
        need(runtime.glue.WebEngine.prototype, 'debugLoseDeviceDuringForward');
        return model.engine?.debugLoseDeviceDuringForward(Number(arg ?? 0));
      case 'trap-in-call':
        need(runtime.glue.WebEngine.prototype, 'debugTrapInNextForward');
        if (!model.live) await model.load();
        return model.engine.debugTrapInNextForward();
      case 'memory':
        need(runtime.glue, 'debugMemoryBytes');
        return runtime.glue.debugMemoryBytes();
      case 'weight-prefetch':
        if (!model.live) await model.load();
        return model.engine.weightPrefetch();
      case 'set-weight-prefetch':
        need(runtime.glue.WebEngine.prototype, 'debugSetWeightPrefetch');
        if (!model.live) await model.load();
        return model.engine.debugSetWeightPrefetch(arg ?? undefined);
      case 'threads':
        return runtime.glue.setThreads(Number(arg));
      default:
        throw new Error(`unknown test hook ${name}`);
    }
  });
}

/** The `trap` hook at once (the express lane): throws the error a call would after a trap; null for other hooks. */
export function runHookNow(model, name) {
  if (name !== 'trap') return null;
  try {
    need(runtime.glue, 'debugTrap');
    runtime.glue.debugTrap();
  } catch (e) {
    throw model.recover(e);
  }
  return null;
}
