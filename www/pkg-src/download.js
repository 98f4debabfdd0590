// One file over HTTP: GET with clear errors and a watchdog, retries where trying again may help,
// the body streamed with progress, and web pages answered in a file's place refused.

import { fetchHint, notFoundHint } from './urls.js';
import { watchdog } from './watchdog.js';

/** An error for a failed download; `retry`: trying again may help (a server error, a cut-off body). */
export function failure(message, { retry = false, notFound = false } = {}) {
  return Object.assign(new Error(message), { retry, notFound });
}

/**
 * Node's (undici's) causes of a connection closed under a request: a server closing an idle
 * kept-alive connection just as the request reuses it does that, and a new connection answers.
 * Browsers retry those themselves (and give no cause).
 */
const RESETS = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/**
 * GET with a clear error; `null` for 404 (and the Hub's 401 for unknown repositories) when the
 * file is optional. `label` names a model id in errors.
 */
export async function get(url, signal, optional, label, timeout) {
  // `res.dog` watches the body too (readBody); a server that stops sending ends the request.
  const dog = watchdog(signal, timeout);
  let res;
  try {
    res = await fetch(url, { signal: dog.signal });
  } catch (e) {
    dog.stop();
    if (signal?.aborted) throw signal.reason;
    if (dog.timedOut) throw failure(`no answer from ${url}: ${dog.signal.reason.message} (downloadTimeout)`, { retry: true });
    const cause = e.cause?.code ?? e.cause?.message;
    throw failure(`network error fetching ${url}: ${e.message}${cause ? ` (${cause})` : ''}${fetchHint(url)}`, { retry: RESETS.has(e.cause?.code) });
  }
  const missing = res.status === 404 || (label && res.status === 401);
  if (res.ok) return Object.assign(res, { dog });
  dog.stop();
  if (missing && optional) return null;
  const name = url.split('/').at(-1);
  if (label && missing) {
    throw failure(`${label}: ${name} not found (HTTP ${res.status} for ${url}; a private or gated model needs a token, which webert does not send)`, { notFound: true });
  }
  const retry = res.status >= 500 || res.status === 429;
  const hint = res.status === 404 ? notFoundHint(url) : '';
  throw failure(`${label ? `${label}: ${name}: ` : ''}${url}: HTTP ${res.status}${hint}`, { retry, notFound: res.status === 404 });
}

/** `work()`, tried up to 3 times while its failure says trying again may help. */
export async function retrying(work, signal) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (e) {
      if (!e?.retry || attempt >= 3 || signal?.aborted) throw e;
      await new Promise((ok) => setTimeout(ok, 300 * 2 ** attempt));
    }
  }
}

export async function readBody(res, url, name, progress, signal) {
  const total = Number(res.headers.get('content-length')) || 0;
  if (total) progress.update(name, 0, total); // the size, before any of the body arrives
  if (!res.body) return new Uint8Array(await res.arrayBuffer().finally(() => res.dog?.stop()));
  const reader = res.body.getReader();
  const chunks = [];
  let loaded = 0;
  const { dog } = res;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      dog?.kick();
      chunks.push(value);
      loaded += value.byteLength;
      progress.update(name, loaded, total);
    }
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    const why = dog?.timedOut ? `${dog.signal.reason.message} (downloadTimeout)` : e.cause?.message ?? e.message;
    throw failure(`network error reading ${url} after ${loaded}${total ? ` of ${total}` : ''} bytes: ${why}`, { retry: true });
  } finally {
    dog?.stop();
  }
  if (!total) progress.update(name, loaded, loaded); // the size, now that it is known
  const out = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
