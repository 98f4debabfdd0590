// Model addresses: a Hugging Face address without its scheme, a folder URL resolved against the
// page, and what a failed fetch of one most likely means.

const HUB = /^(www\.)?(huggingface\.co|hf\.co)(\/|$)/i;

/** A Hugging Face address typed without its scheme is absolute, not a path under the page. */
export function withScheme(source) {
  return HUB.test(source) ? `https://${source}` : source;
}

/** The folder URL of a model source, resolved against the page when it is relative. */
export function folderUrl(base) {
  const s = withScheme(base);
  return new URL(s.endsWith('/') ? s : `${s}/`, typeof location !== 'undefined' ? location.href : undefined);
}

/** What to add to a failed fetch of `url`'s message: why it may have failed. */
export function fetchHint(url) {
  const page = typeof location !== 'undefined' && /^https?:$/.test(location.protocol) ? location.origin : null;
  if (!page || new URL(url).origin === page) return '';
  // Browsers say only "Failed to fetch" (or "NetworkError…", "Load failed") for a refused
  // cross-origin request; the likely causes are worth naming.
  return `. The server may not allow cross-origin requests from ${page} (CORS: it must answer with Access-Control-Allow-Origin), or it cannot be reached`;
}

/** What a 404 of `url` most likely means. */
export function notFoundHint(url) {
  const u = new URL(url);
  if (HUB.test(u.host + '/') && !u.pathname.includes('/resolve/')) {
    return ' (a Hugging Face model page is not its files: use https://huggingface.co/ORG/NAME/resolve/main/)';
  }
  return ' (not found; is this a Hugging Face model folder?)';
}
