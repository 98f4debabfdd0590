#!/usr/bin/env node
// A local stand-in for the Hugging Face Hub, for tests that must not reach the internet: model
// folders served under the Hub's URL layout (`/{org}/{name}/resolve/{revision}/{file}`), weight
// files answered with a 302 redirect to a second "CDN" path as the Hub does, CORS headers as the
// Hub sends them, and faults on demand.
//
// In Node: `const hub = await serveHub({ repos: { 'test/pii': { dir } } })` → { url, log, fault, close }.
// As a process (the Rust tests): `node tests/mock-hub.mjs '{"repos":{"test/pii":{"dir":"models/pii"}}}'`
// prints `{"url":"http://127.0.0.1:PORT"}` and serves until its stdin closes. Control paths:
// `GET /__log` (the requests so far, as JSON), `GET /__fault?repo=&file=&kind=&times=`.
//
// Faults (per repo and file, for the next `times` requests, default all): `missing` (404),
// `error500`, `html` (200 with an HTML page), `truncate` (a full Content-Length, half the body,
// then the connection closes), `lying-length` (a Content-Length past the body, then it closes),
// `short-length` (a Content-Length of half the file, and that half: a whole-looking response),
// `stall` (a full Content-Length, half the body, then nothing while the connection stays open),
// `hang` (no answer at all), `reset` (the connection closed before any answer, as a server
// closing an idle kept-alive connection just as a request reuses it).
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const REVISIONS = ['main', 'v1.0'];
const LFS = /\.(onnx|safetensors|bin|onnx_data)$/;

export function serveHub({ repos, port = 0 }) {
  const table = new Map(Object.entries(repos).map(([id, r]) => [id, { dir: resolve(r.dir), faults: new Map(Object.entries(r.faults ?? {})) }]));
  const log = [];
  let base = '';

  const fault = (repo, file, kind, times = Infinity) => {
    const r = table.get(repo);
    if (!r) throw new Error(`mock hub: no repo ${repo}`);
    if (kind) r.faults.set(file, { kind, times });
    else r.faults.delete(file);
  };
  /** The fault to apply now to this repo's file, counting it down. */
  const takeFault = (r, file) => {
    const f = r.faults.get(file);
    if (!f) return null;
    const spec = typeof f === 'string' ? { kind: f, times: Infinity } : f;
    if (!(spec.times > 0)) return null;
    r.faults.set(file, { ...spec, times: spec.times - 1 });
    return spec.kind;
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    const path = decodeURIComponent(url.pathname);
    log.push({ method: req.method, path });
    const cors = {
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Expose-Headers': 'Content-Length, ETag, X-Error-Code, X-Linked-Size, X-Repo-Commit',
      'Cross-Origin-Resource-Policy': 'cross-origin',
    };
    const send = (code, body, headers = {}) => {
      res.writeHead(code, { ...cors, 'Content-Type': 'text/plain; charset=utf-8', ...headers });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method === 'OPTIONS') return send(204, '', { 'Access-Control-Allow-Headers': '*', 'Access-Control-Allow-Methods': 'GET, HEAD' });
    if (path === '/__log') return send(200, JSON.stringify(log), { 'Content-Type': 'application/json' });
    if (path === '/__fault') {
      const q = url.searchParams;
      fault(q.get('repo'), q.get('file'), q.get('kind'), q.has('times') ? Number(q.get('times')) : Infinity);
      return send(200, 'ok');
    }
    // /{org}/{name}/resolve/{revision}/{file…} on the Hub; /cdn/{org}/{name}/{file…} on the "CDN".
    const cdn = path.startsWith('/cdn/');
    const parts = path.split('/').slice(cdn ? 2 : 1);
    const id = parts.slice(0, 2).join('/');
    const r = table.get(id);
    if (!r) return send(401, 'Repository not found', { 'X-Error-Code': 'RepoNotFound' });
    let file;
    if (cdn) {
      file = parts.slice(2).join('/');
    } else {
      if (parts[2] !== 'resolve') return send(404, 'not found');
      if (!REVISIONS.includes(parts[3])) return send(404, 'Revision Not Found', { 'X-Error-Code': 'RevisionNotFound' });
      file = parts.slice(4).join('/');
    }
    const full = normalize(join(r.dir, file));
    if (!full.startsWith(r.dir + sep)) return send(403, 'forbidden');
    let size;
    try {
      const s = await stat(full);
      if (!s.isFile()) throw new Error('not a file');
      size = s.size;
    } catch {
      return send(404, 'Entry not found', { 'X-Error-Code': 'EntryNotFound' });
    }
    if (!cdn && LFS.test(file)) {
      const to = `${base}/cdn/${id}/${file}?sig=${Date.now()}`;
      return send(302, `Found. Redirecting to ${to}`, { Location: to, 'X-Linked-Size': size });
    }
    const kind = takeFault(r, file);
    if (kind === 'hang') return; // the connection stays open, unanswered
    if (kind === 'reset') return req.socket.destroy();
    if (kind === 'missing') return send(404, 'Entry not found', { 'X-Error-Code': 'EntryNotFound' });
    if (kind === 'error500') return send(500, 'Internal Error');
    if (kind === 'html') return send(200, '<!doctype html><html><body><h1>We are down for maintenance</h1></body></html>', { 'Content-Type': 'text/html; charset=utf-8' });
    const type = file.endsWith('.json') ? 'application/json' : 'application/octet-stream';
    const bytes = await readFile(full);
    const half = Math.floor(size / 2);
    const declared = kind === 'lying-length' ? size + 1000 : kind === 'short-length' ? half : size;
    res.writeHead(200, { ...cors, 'Content-Type': type, 'Content-Length': declared, ETag: `"${size}"` });
    if (req.method === 'HEAD') return res.end();
    if (kind === 'short-length') return res.end(bytes.subarray(0, half));
    if (kind === 'stall') return res.write(bytes.subarray(0, half));
    if (kind === 'truncate' || kind === 'lying-length') {
      const part = kind === 'truncate' ? bytes.subarray(0, Math.floor(size / 2)) : bytes;
      res.write(part, () => setTimeout(() => res.destroy(), 20));
      return;
    }
    res.end(bytes);
  });

  return new Promise((ok, err) => {
    server.once('error', err);
    server.listen(port, '127.0.0.1', () => {
      base = `http://127.0.0.1:${server.address().port}`;
      ok({
        url: base,
        log,
        fault,
        /** The requests for `id`'s `file` so far (the Hub's path and the CDN's). */
        requests: (id, file) => log.filter((l) => l.path.endsWith(`/${file}`) && l.path.includes(`/${id}/`)),
        close: () => new Promise((done) => {
          server.closeAllConnections();
          server.close(done);
        }),
      });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const config = JSON.parse(process.argv[2] ?? '{}');
  const hub = await serveHub(config);
  process.stdout.write(`${JSON.stringify({ url: hub.url })}\n`);
  process.stdin.on('end', () => hub.close().then(() => process.exit(0)));
  process.stdin.resume();
}
