// A download that stops sending (a server that stalls mid-file, or never answers) would otherwise
// hang a load for good: browsers set no timeout on a fetch. The watchdog aborts a request after
// `ms` milliseconds without a byte, and says so.

/** The default `downloadTimeout`: 30 s without data ends a request (it is then tried again). */
export const DOWNLOAD_TIMEOUT = 30_000;

/**
 * A signal for one request: aborts when `outer` does, or when `ms` pass without `kick()`
 * (`timedOut` then says so). `stop()` ends the watch. `ms` 0 or Infinity: no timeout.
 */
export function watchdog(outer, ms = DOWNLOAD_TIMEOUT) {
  const ctl = new AbortController();
  const dog = { signal: ctl.signal, timedOut: false, kick, stop };
  let timer = null;
  const onAbort = () => ctl.abort(outer.reason);
  outer?.addEventListener('abort', onAbort, { once: true });
  if (outer?.aborted) ctl.abort(outer.reason);
  function kick() {
    clearTimeout(timer);
    if (!(ms > 0 && ms < Infinity)) return;
    timer = setTimeout(() => {
      dog.timedOut = true;
      ctl.abort(new DOMException(`no data for ${ms / 1000} s`, 'TimeoutError'));
    }, ms);
  }
  function stop() {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onAbort);
  }
  kick();
  return dog;
}
