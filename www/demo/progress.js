import { resolveModel } from '../pkg/env.js';
import { $, el } from './dom.js';

export const mb = (n) => (n / 1048576).toFixed(1);

// One progress row per model (per source: two tabs loading the same folder share a row).
const rows = new Map();

export function progressRow(want) {
  const key = typeof want.source === 'string' ? want.source : want.name;
  let row = rows.get(key);
  if (!row) {
    const label = el('span', { class: 'what' });
    const bar = el('progress', { max: 1, 'aria-label': `Loading ${want.name}` });
    row = { key, users: 0, li: el('li', { dataset: { model: key } }, label, bar), label, bar, size: 0, text: `Starting ${want.name}…` };
    row.show = () => {
      const size = row.size && !row.downloading ? ` (${mb(row.size)} MB to download)` : '';
      row.label.textContent = row.text + size;
    };
    row.show();
    $('#loads').append(row.li);
    rows.set(key, row);
    if (want.weights && typeof want.source === 'string') {
      // The size before the download starts, from the weights file's headers (a Hub id's folder
      // on env.remoteHost; its 302 to the CDN is followed). For other URLs the package reports
      // the size from the weights' response headers, before their bytes.
      const folder = new URL(resolveModel(want.source).source, location.href);
      fetch(new URL(want.weights, folder.href.endsWith('/') ? folder : `${folder}/`), { method: 'HEAD' })
        .then((r) => (r.ok && Number(r.headers.get('content-length'))) || 0)
        .then((n) => {
          row.size = n;
          row.li.dataset.size = n;
          row.show();
        }, () => {});
    }
  }
  row.users++;
  const name = want.name;
  return {
    update(p) {
      const { bar } = row;
      if (p.stage === 'download') {
        row.downloading = true;
        const total = Math.max(p.total, row.size);
        row.text = `Downloading ${name}: ${mb(p.bytes)} / ${total ? mb(total) : '?'} MB${p.cached ? ' (from the cache)' : ''}`;
        bar.max = total || 1;
        bar.value = p.bytes;
      } else if (p.stage === 'compile' && (p.bytes > 0 || !row.downloading)) {
        // (The module's own start, bytes 0, runs during the downloads: their bar stays.)
        row.text = `Preparing ${name}…`;
        bar.removeAttribute('value');
      } else if (p.stage === 'upload') {
        row.text = `Setting up WebGPU for ${name}…`;
        bar.removeAttribute('value');
      }
      row.show();
    },
    done() {
      if (--row.users > 0) return;
      row.li.remove();
      rows.delete(row.key);
    },
  };
}
