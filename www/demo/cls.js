// The classification tab, with its Teach mode.
import { pipeline, train } from '../pkg/webert.js';
import { action } from './action.js';
import { renderBars } from './bars.js';
import { clsLabels, teaching } from './cls-mode.js';
import { code } from './code.js';
import { DEFAULTS } from './defaults.js';
import { $, el } from './dom.js';
import { showError } from './errors.js';
import { setLatency } from './latency.js';
import { ensure } from './load.js';
import { device, quantized } from './settings.js';
import { state } from './state.js';

action('cls', '#cls-run', async (model, watch) => {
  const text = $('#cls-text').value;
  const clf = teaching() ? await taught(model) : model;
  const result = await cutIfLong((cut) => (teaching() || state.loaded.cls.mode === 'classifier'
    ? clf(text, { top_k: null, ...cut, ...(teaching() ? {} : watch) })
    : clf(text, clsLabels(), { multi_label: $('#cls-multi').checked, hypothesis_template: $('#cls-template').value, ...cut, ...watch })));
  // Zero-shot answers `{ sequence, labels, scores }`, a classifier `[{ label, score }]`.
  const rows = Array.isArray(result) ? result : result.labels.map((label, i) => ({ label, score: result.scores[i] }));
  renderBars('#cls-out', rows.map((r) => ({ ...r, dataset: { label: r.label } })));
  $('#cls-out').dataset.method = result.method ?? 'classifier';
  setLatency('#cls-ms', result, clf);
});
/**
 * `classify({})`; a text past the model's limit again with `truncation: true`, and a note under
 * the result that says it was cut (the package's rule: never silently).
 */
async function cutIfLong(classify) {
  const note = $('#cls-cut');
  note.hidden = true;
  try {
    return await classify({});
  } catch (e) {
    const long = /input is (\d+) tokens; the model takes at most (\d+)/.exec(e.message);
    if (!long) throw e;
    const result = await classify({ truncation: true });
    note.textContent = `This input is ${long[1]} tokens and the model reads at most ${long[2]}: it was cut there (truncation: true), the rest is not classified.`;
    note.hidden = false;
    return result;
  }
}
$('#cls-zero-shot').addEventListener('click', () => {
  state.chosen.cls = DEFAULTS.cls;
  ensure('cls').catch(() => {});
});
for (const id of ['#cls-labels', '#cls-template', '#cls-multi']) $(id).addEventListener('change', () => code('cls'));

// Teach mode: a head trained on the tab's model, kept in IndexedDB.
function syncMode() {
  $('#teach').hidden = !teaching();
  $('#cls-zs-options').hidden = teaching() || (state.loaded.cls?.mode ?? 'similarity') === 'classifier';
  $('#cls-method').hidden = teaching(); // it explains the zero-shot scores, not a taught head's
}
for (const r of document.querySelectorAll('input[name=cls-mode]')) r.addEventListener('change', syncMode);
syncMode(); // a reload may restore the radio buttons

/** `label<TAB>text` lines, or a `label:` line followed by its examples; errors name the line. */
function parseExamples(text) {
  const examples = [];
  let label = null;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    const tab = raw.indexOf('\t');
    if (tab > 0) examples.push({ label: raw.slice(0, tab).trim(), text: raw.slice(tab + 1).trim() });
    else if (line.endsWith(':') && line.length > 1) label = line.slice(0, -1).trim();
    else if (label) examples.push({ label, text: line });
    else throw new Error(`Examples line ${i + 1}: start with a "label:" line, or write "label<TAB>text"`);
  });
  return examples;
}

const headStore = {
  open: () => new Promise((ok, err) => {
    const r = indexedDB.open('webert-demo', 1);
    r.onupgradeneeded = () => r.result.createObjectStore('heads');
    r.onsuccess = () => ok(r.result);
    r.onerror = () => err(r.error);
  }),
  async run(mode, fn) {
    const db = await this.open();
    return new Promise((ok, err) => {
      const req = fn(db.transaction('heads', mode).objectStore('heads'));
      req.onsuccess = () => ok(req.result);
      req.onerror = () => err(req.error);
    }).finally(() => db.close());
  },
  get() { return this.run('readonly', (s) => s.get('teach')); },
  put(v) { return this.run('readwrite', (s) => s.put(v, 'teach')); },
};

function showHead(clf, how) {
  const h = clf.head;
  $('#teach-status').textContent = `${how}: ${h.labels.join(', ')} (${h.examples} examples, C = ${h.C})`;
  $('#teach-download').disabled = false;
}

/** Keeps a trained or loaded classifier (in memory and in IndexedDB). */
async function keep(clf, examples) {
  state.teach?.clf.dispose();
  state.teach = { clf, want: state.chosen.cls };
  await headStore.put({ head: clf.exportHead(), examples: examples ?? $('#teach-examples').value }).catch(() => {});
}

/** The classifier for Teach mode: the one trained here, else the head saved in this browser. */
async function taught(model) {
  if (state.teach?.want === state.chosen.cls) return state.teach.clf;
  const saved = await headStore.get().catch(() => null);
  if (!saved) throw new Error('Teach mode: train a classifier first (or load a head).');
  const clf = await pipeline('text-classification', state.chosen.cls.source, { head: saved.head, device: device(), quantized, dtype: state.chosen.cls.dtype });
  state.teach?.clf.dispose();
  state.teach = { clf, want: state.chosen.cls };
  showHead(clf, 'Saved head');
  return clf;
}

action('cls', '#teach-train', async (model) => {
  const examples = parseExamples($('#teach-examples').value);
  const C = Number($('#teach-c').value);
  const status = $('#teach-status');
  const clf = await train('text-classification', model, examples, {
    C,
    onProgress: (p) => p.stage === 'embed' && (status.textContent = `Embedding examples ${p.done} / ${p.total}…`),
  });
  await keep(clf);
  showHead(clf, 'Trained');
  status.textContent += ` in ${(clf.training.embed_ms + clf.training.fit_ms).toFixed(0)} ms (fit ${clf.training.fit_ms.toFixed(1)} ms)`;
  $('#panel-cls').dataset.trained = Number($('#panel-cls').dataset.trained ?? 0) + 1; // tests wait on this
});

$('#teach-download').addEventListener('click', () => {
  if (!state.teach) return;
  const a = el('a', { href: URL.createObjectURL(new Blob([state.teach.clf.exportHead()])), download: 'classifier-head.safetensors' });
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
});

$('#teach-load').addEventListener('change', async () => {
  const file = $('#teach-load').files[0];
  if (!file) return;
  try {
    await ensure('cls');
    const clf = await pipeline('text-classification', state.chosen.cls.source, { head: file, device: device(), quantized, dtype: state.chosen.cls.dtype });
    await keep(clf);
    showHead(clf, `Loaded ${file.name}`);
    showError('cls', null);
  } catch (e) {
    showError('cls', `Could not load the head: ${e.message}`);
  }
});

headStore.get().then((saved) => {
  if (!saved) return;
  $('#teach-examples').value = saved.examples;
  $('#teach-status').textContent = 'A head trained earlier is saved in this browser.';
}, () => {});
