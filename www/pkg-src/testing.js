// webert's test hooks, an entry point of their own so that a pipeline shows only what a user may
// call: `import { testHooks } from 'webert/testing'; await testHooks(pipe).trap()`. `trap`,
// `trapAsync` and `loseDevice` need a package built with the cargo feature `test-hooks`
// (WEBERT_WEB_FEATURES=test-hooks bash scripts/build_web.sh); elsewhere they reject saying so.

import { HOST } from './host.js';
import { laneRequest } from './lane.js';

/** The test hooks of `pipe`, a pipeline from `pipeline()`. */
export function testHooks(pipe) {
  const host = pipe?.[HOST];
  if (!host) throw new TypeError("testHooks() takes a pipeline that webert's pipeline() returned");
  const hook = (name, arg, lane) => host.send({ op: 'hook', hook: name, arg }, { lane });
  return {
    // The trap takes the express lane when a call would, to test a trap there.
    trap: () => hook('trap', undefined, () => laneRequest('hook', 'trap')),
    trapAsync: () => hook('trap-async'),
    loseDevice: () => hook('lose-device'),
    loseDeviceDuringCall: (after = 0) => hook('lose-device-during-call', after),
    trapInNextCall: () => hook('trap-in-call'),
    wasmMemory: () => hook('memory'),
    threads: (n) => hook('threads', n),
    weightPrefetch: () => hook('weight-prefetch'),
    setWeightPrefetch: (on) => hook('set-weight-prefetch', on),
    laneStats: () => (host.laneStats ? { ...host.laneStats } : null),
  };
}
