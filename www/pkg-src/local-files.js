// A model folder's files from the caller's objects (a FileList or File[] from a folder picker
// or drag and drop, or name → ArrayBuffer) or, in Node, from a directory.

import { configOf, pickFiles } from './file-choice.js';
import { checkHash } from './sha256.js';

/** `name → data` entries from a FileList, a File[] (folder picker paths), or a plain object. */
export function entriesOf(source) {
  const list = typeof FileList !== 'undefined' && source instanceof FileList ? [...source] : source;
  if (Array.isArray(list)) {
    return list.map((f) => {
      if (f && typeof f === 'object' && 'name' in f && 'data' in f && !(f instanceof Blob)) return [f.name, f.data];
      const rel = f.webkitRelativePath || f.name;
      // Drop the picked folder's own name: "pii/onnx/model_q4.onnx" -> "onnx/model_q4.onnx".
      return [f.webkitRelativePath ? rel.split('/').slice(1).join('/') : rel, f];
    });
  }
  if (source && typeof source === 'object') return Object.entries(source);
  throw new Error('model must be a folder URL, a FileList / File[] or an object of file name → ArrayBuffer');
}

async function bytesOf(name, data) {
  if (data instanceof Blob) return new Uint8Array(await data.arrayBuffer());
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new Error(`${name}: expected a File, Blob, ArrayBuffer or typed array`);
}

function normalizeName(name, all) {
  // Files picked one by one lose the onnx/ folder; accept them under either name.
  return all.includes(name) ? name : name.replace(/^onnx\//, '');
}

export async function fromEntries(source, opts, progress, layout) {
  const entries = entriesOf(source);
  const names = entries.map(([n]) => n);
  const origin = entries[0]?.[1]?.webkitRelativePath?.split('/')[0] || 'local files';
  const configEntry = entries.find(([n]) => n === 'config.json');
  const config = configEntry ? configOf(await bytesOf(...configEntry)) : null;
  await layout.ready;
  const wanted = pickFiles(origin, names.map((n) => (n.endsWith('.onnx') && !n.includes('/') ? `onnx/${n}` : n)), opts, layout, config);
  const files = [];
  for (const want of wanted) {
    const name = normalizeName(want, names);
    const data = entries.find(([n]) => n === name)[1];
    const bytes = await bytesOf(name, data);
    await checkHash(want, bytes, opts.sha256, name);
    progress.update(want, bytes.byteLength, bytes.byteLength);
    files.push({ name: want, bytes, blob: data instanceof Blob ? data : undefined });
  }
  return { origin, files };
}

export async function fromNodeDir(dir, opts, progress, layout) {
  const fsName = 'node:fs/promises';
  const pathName = 'node:path';
  const fs = await import(/* @vite-ignore */ fsName);
  const path = await import(/* @vite-ignore */ pathName);
  const root = dir.startsWith('file:') ? new URL(dir).pathname : dir;
  const list = async (sub) => {
    try {
      return await fs.readdir(path.join(root, sub));
    } catch (e) {
      if (sub) return [];
      throw new Error(`${root}: ${e.code === 'ENOENT' ? 'no such folder' : e.message}`);
    }
  };
  const names = [...(await list('')), ...(await list('onnx')).map((n) => `onnx/${n}`)];
  const files = [];
  const config = names.includes('config.json') ? configOf(await fs.readFile(path.join(root, 'config.json')).catch(() => null)) : null;
  await layout.ready;
  for (const name of pickFiles(root, names, opts, layout, config)) {
    const bytes = new Uint8Array(await fs.readFile(path.join(root, name)));
    await checkHash(name, bytes, opts.sha256, path.join(root, name));
    progress.update(name, bytes.byteLength, bytes.byteLength);
    files.push({ name, bytes });
  }
  return { origin: root, files };
}
