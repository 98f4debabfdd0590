#!/usr/bin/env node
// A small static file server for the demo and the browser tests, on 127.0.0.1 only: the demo
// (www/) at /, the models at /models/, correct MIME types (application/wasm), and cross-origin
// isolation headers (so that webert can start its WebAssembly threads build).
//   node scripts/serve.mjs [--port 8080] [--root www] [--models models]
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
  '.ts': 'text/plain; charset=utf-8',
};

/**
 * Serves `mounts` ({ '/prefix/': directory }, longest prefix wins); resolves to { url, close }.
 * `fallback`: a file answered, 200 and as HTML, for every path that is not there, as single-page
 * app servers do (Vite, Netlify/Vercel rewrites), to test that webert tells such a page from a file.
 * `isolated: false` leaves out the cross-origin isolation headers; `headScript` (tests) is put
 * first in the head of every HTML page, as an inline script.
 */
export function serve({ mounts, port = 0, fallback = null, isolated = true, headScript = null }) {
  const table = Object.entries(mounts)
    .map(([prefix, dir]) => [prefix, resolve(dir)])
    .sort((a, b) => b[0].length - a[0].length);
  // The last requests, for a test that waits on a page to say what the page last asked for
  // (a page's own steps can be logged as GETs of /__trace/<step>, answered 404).
  const log = [];
  const t0 = Date.now();
  const server = createServer(async (req, res) => {
    const entry = { at: Date.now() - t0, method: req.method, path: req.url, status: null, ms: null };
    log.push(entry);
    if (log.length > 200) log.shift();
    res.on('close', () => {
      entry.status = res.writableFinished ? res.statusCode : `${res.statusCode}, closed unfinished`;
      entry.ms = Date.now() - t0 - entry.at;
    });
    const headers = isolated ? {
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
      'Cross-Origin-Resource-Policy': 'same-origin',
      'Cache-Control': 'no-cache',
    } : { 'Cache-Control': 'no-cache' };
    const fail = (code, msg) => {
      res.writeHead(code, { ...headers, 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(msg);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return fail(405, 'method not allowed');
    let path;
    try {
      path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      return fail(400, 'bad path');
    }
    const spa = async () => {
      const body = await readFile(fallback);
      res.writeHead(200, { ...headers, 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': body.byteLength });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (path.startsWith('/__trace/')) {
      res.writeHead(204, headers);
      return res.end();
    }
    const mount = table.find(([prefix]) => path.startsWith(prefix) || `${path}/` === prefix);
    if (!mount) return fallback ? spa() : fail(404, 'not found');
    const [prefix, dir] = mount;
    let file = normalize(join(dir, path.slice(prefix.length)));
    if (file !== dir && !file.startsWith(dir + sep)) return fail(403, 'forbidden');
    try {
      let s = await stat(file);
      if (s.isDirectory()) {
        if (!path.endsWith('/')) {
          res.writeHead(301, { ...headers, Location: `${path}/` });
          return res.end();
        }
        file = join(file, 'index.html');
        s = await stat(file);
      }
      const type = TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
      if (headScript && type.startsWith('text/html')) {
        const html = (await readFile(file, 'utf8')).replace(/<head>/i, (h) => `${h}<script>${headScript}</script>`);
        res.writeHead(200, { ...headers, 'Content-Type': type });
        return res.end(req.method === 'HEAD' ? undefined : html);
      }
      res.writeHead(200, { ...headers, 'Content-Type': type, 'Content-Length': s.size });
      if (req.method === 'HEAD') return res.end();
      createReadStream(file).on('error', () => res.destroy()).pipe(res);
    } catch {
      if (fallback) return spa().catch(() => fail(404, 'not found'));
      fail(404, 'not found');
    }
  });
  return new Promise((ok, err) => {
    server.once('error', err);
    server.listen(port, '127.0.0.1', () => {
      const url = `http://127.0.0.1:${server.address().port}/`;
      ok({
        url,
        /** The last `n` requests, one line each: start (ms since the server started), method, path, status, duration. */
        requests: (n = 40) => log.slice(-n).map((e) => `${e.at} ms ${e.method} ${e.path} → ${e.status ?? 'pending'}${e.ms == null ? '' : ` (${e.ms} ms)`}`),
        close: () => new Promise((done) => {
          server.closeAllConnections();
          server.close(done);
        }),
      });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const root = resolve(fileURLToPath(import.meta.url), '../..');
  const { url } = await serve({
    port: Number(arg('port', 8080)),
    mounts: { '/': arg('root', join(root, 'www')), '/models/': arg('models', join(root, 'models')) },
  });
  console.log(`serving on ${url}  (Ctrl-C stops)`);
}
