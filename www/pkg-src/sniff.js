// Tells a downloaded body from the file that was asked for by its bytes: many servers answer a
// missing path with status 200 and something else (Vite and SPA hosts their index.html, others
// a "Not Found" text or a JSON error), which must not reach the engine as weights.

/** Whether a body is a web page rather than the file asked for. */
export function isHtml(bytes, res) {
  if (/^\s*text\/html/i.test(res.headers.get('content-type') ?? '')) return true;
  const start = new TextDecoder().decode(bytes.subarray(0, 64)).replace(/^\uFEFF?\s*/, '');
  return /^<(?:!doctype\s+html|html[\s>]|head[\s>]|body[\s>]|!--)/i.test(start);
}

/**
 * The shard files a `model.safetensors.index.json` body names (sorted, once each), or null when
 * the body is no such index (not JSON, or JSON without a `weight_map` of file names).
 */
export function shardNames(bytes) {
  let map;
  try {
    map = JSON.parse(new TextDecoder().decode(bytes))?.weight_map;
  } catch {
    return null;
  }
  const names = map && typeof map === 'object' ? Object.values(map) : [];
  if (!names.length || !names.every((n) => typeof n === 'string')) return null;
  return [...new Set(names)].sort();
}

/** Refuses a `.json` file that is not JSON (an HTML error page, say) before it is kept. */
export function checkJson(name, bytes, res, where) {
  if (!name.endsWith('.json')) return;
  try {
    JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    const start = new TextDecoder().decode(bytes.subarray(0, 40));
    const err = new Error(`${where}: ${name} is not JSON (${e.message}; content-type ${res.headers.get('content-type')}, starts ${JSON.stringify(start)})`);
    throw Object.assign(err, { notJson: true });
  }
}

/**
 * Why `bytes` cannot be the weights file `name`, or null when they may be: a safetensors file
 * starts with its header's length (8 bytes, little-endian) and the header's `{`; an ONNX file is
 * a protobuf message, whose first byte is a field tag with a wire type protobuf writes (0, 1, 2, 5).
 */
export function notWeights(name, bytes) {
  if (name.endsWith('.safetensors')) {
    if (bytes.byteLength < 9) return 'too short for a safetensors file';
    const header = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
    // (A body cut short is the engine's to refuse: only the start is looked at here.)
    if (header >= 2n ** 32n || bytes[8] !== 0x7b) return 'no safetensors header';
    return null;
  }
  if (name.endsWith('.onnx')) {
    const tag = bytes[0];
    if (tag === undefined || tag >> 3 === 0 || ![0, 1, 2, 5].includes(tag & 7)) return 'not an ONNX protobuf';
  }
  return null;
}
