// Feature extraction's result as transformers.js shapes it: a Tensor with `type`, `data` (a flat
// Float32Array), `dims`, `size` and `tolist()`, where `tensor[i]` is the i-th sub-tensor along
// the first dimension, so that code written for transformers.js reads it unchanged.

export class Tensor {
  constructor(type, data, dims) {
    const size = dims.reduce((a, b) => a * b, 1);
    if (data.length !== size) throw new Error(`a Tensor of dims [${dims}] needs ${size} values, got ${data.length}`);
    Object.assign(this, { type, data, dims: [...dims], size });
    // Integer keys index the first dimension, as transformers.js's Tensor does.
    return new Proxy(this, {
      get: (t, key, receiver) => (typeof key === 'string' && /^\d+$/.test(key) ? t.at(Number(key)) : Reflect.get(t, key, receiver)),
    });
  }

  /** The i-th sub-tensor along the first dimension (negative counts from the end). */
  at(i) {
    const n = this.dims[0];
    if (!(i >= -n && i < n)) throw new RangeError(`index ${i} is out of bounds for dimension 0 of size ${n}`);
    if (i < 0) i += n;
    const inner = this.dims.slice(1);
    const stride = inner.reduce((a, b) => a * b, 1);
    return new Tensor(this.type, this.data.subarray(i * stride, (i + 1) * stride), inner);
  }

  /** Nested arrays of numbers, dims deep. */
  tolist() {
    const build = (offset, d) => {
      if (d === this.dims.length) return this.data[offset];
      const stride = this.dims.slice(d + 1).reduce((a, b) => a * b, 1);
      return Array.from({ length: this.dims[d] }, (_, i) => build(offset + i * stride, d + 1));
    };
    return this.dims.length === 0 ? this.data[0] : build(0, 0);
  }
}

/**
 * A Tensor from the engine's nested rows: one vector per text (`[n, dim]`), or one matrix of
 * token states per text (`[n, longest, dim]`, shorter texts' rows after their end left at 0).
 */
export function tensorOf(rows, tokenStates) {
  const n = rows.length;
  if (!tokenStates) {
    const dim = n ? rows[0].length : 0;
    const data = new Float32Array(n * dim);
    rows.forEach((v, i) => data.set(v, i * dim));
    return new Tensor('float32', data, [n, dim]);
  }
  const longest = Math.max(0, ...rows.map((m) => m.length));
  const dim = rows.find((m) => m.length)?.[0].length ?? 0;
  const data = new Float32Array(n * longest * dim);
  rows.forEach((m, i) => m.forEach((v, t) => data.set(v, (i * longest + t) * dim)));
  return new Tensor('float32', data, [n, longest, dim]);
}

/**
 * Pooled vectors packed one bit per value (1 where the value is > 0), first value in the high
 * bit, as transformers.js's `quantize_embeddings`: `'ubinary'` as uint8, `'binary'` as int8
 * (the byte minus 128).
 */
export function quantizeEmbeddings(tensor, precision = 'binary') {
  if (tensor.dims.length !== 2) throw new Error(`binary quantization takes [texts, dim] vectors, got dims [${tensor.dims}]`);
  const [n, dim] = tensor.dims;
  if (dim % 8 !== 0) throw new Error(`binary quantization packs 8 values a byte: the dimension (${dim}) must be a multiple of 8`);
  if (!['binary', 'ubinary'].includes(precision)) throw new Error(`precision must be 'binary' or 'ubinary', got ${JSON.stringify(precision)}`);
  const bytes = new Uint8Array((n * dim) / 8);
  tensor.data.forEach((v, i) => {
    if (v > 0) bytes[i >> 3] |= 0x80 >> (i & 7);
  });
  if (precision === 'ubinary') return new Tensor('uint8', bytes, [n, dim / 8]);
  return new Tensor('int8', Int8Array.from(bytes, (b) => b - 128), [n, dim / 8]);
}

/** Cosine similarity of two vectors (arrays or typed arrays), as transformers.js's `cos_sim`. */
export function cos_sim(a, b) {
  if (a?.length !== b?.length) throw new TypeError(`cos_sim needs two vectors of one length, got ${a?.length} and ${b?.length}`);
  let [dot, aa, bb] = [0, 0, 0];
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return dot / (Math.sqrt(aa) * Math.sqrt(bb));
}
