#!/usr/bin/env node
// Runs a wasm32-wasip1 program that needs no files (examples/gemm_bench.rs, cpu_profile.rs) in headless Chromium
// with a minimal WASI shim (args, clock, stdout), and prints its output: kernel speed under the
// browser's V8, which can differ from Node's (scripts/wasm_bench.sh).
//   node tests/bench/wasi-chromium.mjs [--worker] program.wasm [args...]
// --worker runs it in a dedicated Web Worker (where the npm package computes) instead of the page.
import { readFileSync } from 'node:fs';
import { launch } from './chromium.mjs';

const inWorker = process.argv[2] === '--worker';
const [wasm, ...args] = process.argv.slice(inWorker ? 3 : 2);
const { page, close } = await launch({ webgpu: false });
try {
  const job = { b64: readFileSync(wasm).toString('base64'), args };
  const out = inWorker
    ? await page.evaluate(({ source, job }) => new Promise((done) => {
      const code = `onmessage = async (e) => postMessage(await (${source})(e.data));`;
      const worker = new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })));
      worker.onmessage = (e) => done(e.data);
      worker.postMessage(job);
    }), { source: run.toString(), job })
    : await page.evaluate(run, job);
  process.stdout.write(out);
} finally {
  await close();
}

async function run({ b64, args }) {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const argv = ['program', ...args].map((a) => new TextEncoder().encode(`${a}\0`));
  let memory;
  let text = '';
  const view = () => new DataView(memory.buffer);
  const exit = {};
  const wasi = {
    args_sizes_get: (count, size) => {
      view().setUint32(count, argv.length, true);
      view().setUint32(size, argv.reduce((n, a) => n + a.length, 0), true);
      return 0;
    },
    args_get: (ptrs, buf) => {
      for (const a of argv) {
        view().setUint32(ptrs, buf, true);
        new Uint8Array(memory.buffer, buf, a.length).set(a);
        ptrs += 4;
        buf += a.length;
      }
      return 0;
    },
    environ_sizes_get: (count, size) => {
      view().setUint32(count, 0, true);
      view().setUint32(size, 0, true);
      return 0;
    },
    environ_get: () => 0,
    clock_time_get: (_id, _precision, ptr) => {
      view().setBigUint64(ptr, BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6)), true);
      return 0;
    },
    fd_write: (_fd, iovs, count, written) => {
      let total = 0;
      for (let i = 0; i < count; i++) {
        const ptr = view().getUint32(iovs + 8 * i, true);
        const len = view().getUint32(iovs + 8 * i + 4, true);
        text += new TextDecoder().decode(new Uint8Array(memory.buffer, ptr, len));
        total += len;
      }
      view().setUint32(written, total, true);
      return 0;
    },
    // What Rust's test harness asks besides (a compiled `cargo test` binary runs here too):
    // descriptors are character devices, no pre-opened directories, yielding is a no-op.
    fd_fdstat_get: (_fd, ptr) => {
      new Uint8Array(memory.buffer, ptr, 24).fill(0);
      view().setUint8(ptr, 2, true);
      return 0;
    },
    fd_prestat_get: () => 8,
    sched_yield: () => 0,
    random_get: (ptr, len) => {
      crypto.getRandomValues(new Uint8Array(memory.buffer, ptr, len));
      return 0;
    },
    proc_exit: (code) => {
      exit.code = code;
      throw exit;
    },
  };
  const imports = new Proxy(wasi, {
    get: (t, name) => t[name] ?? (() => { throw new Error(`WASI ${String(name)} is not in this shim`); }),
  });
  const { instance } = await WebAssembly.instantiate(bytes, { wasi_snapshot_preview1: imports });
  memory = instance.exports.memory;
  try {
    instance.exports._start();
  } catch (e) {
    if (e !== exit) text += `\nerror: ${e}\n`;
    else if (exit.code) text += `\nexit code ${exit.code}\n`;
  }
  return text;
}
