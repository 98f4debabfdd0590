// The caller's sha256 of a model file (`sha256: { name: hex }`), checked when the file arrives.

export async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

export async function checkHash(name, bytes, hashes, where) {
  const want = hashes?.[name];
  if (!want) return;
  const got = await sha256Hex(bytes);
  if (got !== want.toLowerCase()) {
    throw new Error(`${where}: sha256 mismatch (expected ${want}, got ${got})`);
  }
}
