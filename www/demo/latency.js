import { $ } from './dom.js';

/** `WebGPU · <adapter>` or `CPU · simd128`, from a pipeline's backend string. */
export function describe(backend, pipe) {
  if (backend.startsWith('gpu')) return `WebGPU · ${pipe?.adapter ?? backend.slice(4)}`;
  const probe = pipe?.info?.probe;
  const slower = probe && !(probe.gpu_ms < probe.cpu_ms);
  const why = slower ? ' (faster than WebGPU here)' : pipe?.gpuFailure ? ' (WebGPU failed, fell back)' : '';
  return `CPU · ${backend.replace(/^cpu-/, '')}${why}`;
}

export function setLatency(id, result, pipe) {
  const backend = describe(result.backend, pipe);
  $(id).textContent = `${result.wall_ms.toFixed(1)} ms (engine ${result.ms.toFixed(1)} ms, ${backend})`;
  $('#backend').textContent = backend;
}
