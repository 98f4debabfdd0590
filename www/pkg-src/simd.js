// Which of the package's two WebAssembly builds this engine runs: WebAssembly has no run-time
// feature detection, so the relaxed-SIMD build (fused multiply-add GEMM kernel) is chosen when the
// engine validates a tiny module using `f32x4.relaxed_madd` (Chromium ≥ 114 by default; Node 20
// only with --experimental-wasm-relaxed-simd), else the plain simd128 build.

const zeros = new Array(16).fill(0);
const CONST = [0xfd, 0x0c, ...zeros]; // v128.const 0
// (module (func (result v128) (f32x4.relaxed_madd (v128.const 0) (v128.const 0) (v128.const 0))))
const PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // function 0 of type 0
  0x0a, 0x3d, 0x01, 0x3b, 0x00, ...CONST, ...CONST, ...CONST, 0xfd, 0x85, 0x02, 0x0b, // code
]);

export function hasRelaxedSimd() {
  try {
    return WebAssembly.validate(PROBE);
  } catch {
    return false;
  }
}

/** The URL of the .wasm to start (both literal, so that bundlers copy both files). */
export function wasmUrl() {
  return hasRelaxedSimd()
    ? new URL('./webert_wasm_relaxed_bg.wasm', import.meta.url)
    : new URL('./webert_wasm_bg.wasm', import.meta.url);
}
