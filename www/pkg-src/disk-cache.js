// Model ids' files on disk in Node, where there is no Cache API: under `env.cacheDir` in the
// CLI's layout (`{cacheDir}/{host}/{id}/{revision}/{file}`, beside its `.webert-files.json`
// manifest), so that a second process, or `webert … --cache-dir` on the same folder, downloads
// nothing. The same interface as cache.js's ModelCache; files are written whole (a temporary
// file, then a rename), so a process killed mid-write leaves no half file behind.

import { withKey } from './cache.js';
import { env } from './env.js';

const fsName = 'node:fs/promises';
const pathName = 'node:path';

/** The folder of a host in the cache, as the CLI names it (`huggingface.co`, `127.0.0.1_8080`). */
export function hostKey(host) {
  return String(host).replace(/\/+$/, '').split('://').at(-1).replace(/[:/]/g, '_');
}

/** The cache folder of a model id and revision (the whole cache for null), or null where
 * there is no disk cache. */
export async function idFolder(hub, cacheDir = env.cacheDir) {
  if (env.useFSCache === false || !cacheDir) return null;
  const path = await import(/* @vite-ignore */ pathName);
  const urlName = 'node:url';
  const dir = String(cacheDir);
  const root = dir.startsWith('file:') ? (await import(/* @vite-ignore */ urlName)).fileURLToPath(dir) : dir;
  if (!hub) return root;
  return path.join(root, hostKey(env.remoteHost), ...hub.id.split('/'), hub.revision.replaceAll('/', '--'));
}

/** The disk cache of one id's folder URL `root`, or null (option, no cacheDir). */
export async function openDiskCache(opts, hub, root, warn) {
  if (opts.cache === false || !hub?.revision) return null;
  const dir = await idFolder(hub, opts.cacheDir ?? env.cacheDir);
  if (!dir) return null;
  return new DiskCache(await import(/* @vite-ignore */ fsName), await import(/* @vite-ignore */ pathName), dir, String(root), warn);
}

class DiskCache {
  constructor(fs, path, dir, root, warn) {
    Object.assign(this, { fs, path, dir, root, warn });
    /** Why writing stopped (a refused write), or null. */
    this.error = null;
    /** Entries this load read or wrote, for `forget`. */
    this.used = new Set();
  }

  file(url) {
    if (!url.startsWith(this.root)) throw new Error(`${url} is not under ${this.root}`);
    const rel = decodeURIComponent(url.slice(this.root.length));
    if (rel.split('/').some((p) => p === '..' || p === '')) throw new Error(`${url}: not a file of the model folder`);
    return this.path.join(this.dir, ...rel.split('/'));
  }

  async read(url) {
    let bytes;
    try {
      bytes = new Uint8Array(await this.fs.readFile(this.file(url)));
    } catch {
      return null;
    }
    if (url.endsWith('.json')) {
      try {
        JSON.parse(new TextDecoder().decode(bytes));
      } catch {
        await this.delete(url);
        return null;
      }
    }
    this.used.add(url);
    return bytes;
  }

  async has(url) {
    return this.fs.stat(this.file(url)).then(() => true, () => false);
  }

  async write(url, bytes) {
    if (this.error) return false;
    const target = this.file(url);
    const temp = `${target}.part-${process.pid}-${Math.random().toString(36).slice(2)}`;
    try {
      await this.fs.mkdir(this.path.dirname(target), { recursive: true });
      await this.fs.writeFile(temp, bytes);
      await this.fs.rename(temp, target);
      this.used.add(url);
      return true;
    } catch (e) {
      await this.fs.rm(temp, { force: true }).catch(() => {});
      this.error = `${e?.code ?? e?.name ?? 'Error'}: ${e?.message ?? e}`;
      this.warn?.(`webert: could not store ${url} in ${this.dir} (${this.error}); this model is used without caching and will be downloaded again next time`);
      return false;
    }
  }

  async delete(url) {
    this.used.delete(url);
    await this.fs.rm(this.file(url), { force: true }).catch(() => {});
  }

  async manifest(url) {
    try {
      const all = JSON.parse(await this.fs.readFile(this.file(url), 'utf8'));
      if (all && typeof all === 'object' && !Array.isArray(all)) return all;
    } catch {
      // absent or unreadable: probe the folder again
    }
    return {};
  }

  async setManifest(url, key, names) {
    const all = withKey(await this.manifest(url), key, names);
    if (this.error && names) return;
    const target = this.file(url);
    const temp = `${target}.part-${process.pid}`;
    try {
      await this.fs.mkdir(this.dir, { recursive: true });
      await this.fs.writeFile(temp, JSON.stringify(all, null, 2));
      await this.fs.rename(temp, target);
    } catch {
      // a manifest that cannot be written only costs probing the folder again next time
    }
  }

  async forget(manifestUrl, key) {
    for (const url of [...this.used]) await this.delete(url);
    await this.setManifest(manifestUrl, key, null);
  }
}
