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
