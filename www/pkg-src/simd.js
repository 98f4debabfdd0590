// Which of the package's WebAssembly builds this engine runs. WebAssembly has no run-time feature
// detection, so the relaxed-SIMD builds (fused multiply-add and int8 dot-product kernels) are
// chosen when the engine validates a tiny module using every relaxed-SIMD instruction, not just
// one: an engine that ships relaxed SIMD in parts (WebKit with JSC_useWasmRelaxedSIMD accepts
// some opcodes and rejects others) gets the plain simd128 build. A build that still fails to
// compile falls back to the next one (runtime.js).

const V128_CONST_0 = [0xfd, 0x0c, ...new Array(16).fill(0)];
// Every relaxed-SIMD opcode (after the 0xfd prefix) and its operand count.
export const RELAXED_OPS = [
  [0x100, 2], // i8x16.relaxed_swizzle
  [0x101, 1], [0x102, 1], [0x103, 1], [0x104, 1], // i32x4.relaxed_trunc_*
  [0x105, 3], [0x106, 3], [0x107, 3], [0x108, 3], // f32x4/f64x2 relaxed_madd / nmadd
  [0x109, 3], [0x10a, 3], [0x10b, 3], [0x10c, 3], // *.relaxed_laneselect
  [0x10d, 2], [0x10e, 2], [0x10f, 2], [0x110, 2], // f32x4/f64x2 relaxed_min / max
  [0x111, 2], // i16x8.relaxed_q15mulr_s
  [0x112, 2], // i16x8.relaxed_dot_i8x16_i7x16_s
  [0x113, 3], // i32x4.relaxed_dot_i8x16_i7x16_add_s
];

function leb128(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}

function section(id, bytes) {
  return [id, ...leb128(bytes.length), ...bytes];
}

/** `(module (func (result v128) <each op on zero operands, dropped> (v128.const 0)))` */
function probeModule(ops) {
  const body = [0x00]; // no locals
  for (const [op, arity] of ops) {
    for (let i = 0; i < arity; i++) body.push(...V128_CONST_0);
    body.push(0xfd, ...leb128(op), 0x1a); // the op, then drop
  }
  body.push(...V128_CONST_0, 0x0b);
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
    ...section(0x01, [0x01, 0x60, 0x00, 0x01, 0x7b]), // type: () -> v128
    ...section(0x03, [0x01, 0x00]), // function 0 of type 0
    ...section(0x0a, [0x01, ...leb128(body.length), ...body]),
  ]);
}

function validates(bytes) {
  try {
    return WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}

let relaxed;

/** Whether this engine validates every relaxed-SIMD instruction. */
export function hasRelaxedSimd() {
  relaxed ??= validates(probeModule(RELAXED_OPS));
  return relaxed;
}

/**
 * The relaxed-SIMD opcodes this engine rejects, one by one (empty where it has them all, every
 * one where it has none), for `info` and the tests.
 */
export function missingRelaxedOps() {
  return RELAXED_OPS.filter((o) => !validates(probeModule([o]))).map(([op]) => `0xfd ${op}`);
}

export const RELAXED_BUILD_URL = () => new URL('./webert_wasm_relaxed_bg.wasm', import.meta.url);
export const SIMD128_BUILD_URL = () => new URL('./webert_wasm_bg.wasm', import.meta.url);
