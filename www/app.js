// The demo page: four tabs, each with a model (loaded on first use, from a URL, a picked folder
// or a dropped folder) and a task run through the webert package in a Web Worker.
import { env, pipeline, redact, train, webgpuAdapter } from './pkg/webert.js';
import { resolveModel } from './pkg/env.js';

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'style') e.style.cssText = v;
    else if (v === true) e.setAttribute(k, '');
    else if (v !== false && v != null) e.setAttribute(k, v);
  }
  e.append(...children);
  return e;
}

// Each tab's model: what to load by default and what is loaded now. `weights`: the file whose
// size the page shows before the download starts. A model the user picks in the classification
// tab has task `classification`: a classifier, an NLI model or a sentence encoder (see `open`).
// MiniLM (classification and similarity tabs) ships as q8 (transformers.js's browser default,
// `onnx/model_quantized.onnx`) and f32 (`model.safetensors`); `#dtype` picks, `?dtype=fp32` preselects.
const MINILM = {
  q8: { label: 'q8', weights: 'onnx/model_quantized.onnx' },
  fp32: { label: 'f32', weights: 'model.safetensors' },
};
const minilm = (tab, dtype) => ({
  task: { cls: 'zero-shot-classification', sim: 'feature-extraction' }[tab],
  source: 'models/minilm/',
  dtype,
  weights: MINILM[dtype].weights,
  name: tab === 'cls'
    ? `models/minilm (${MINILM[dtype].label}), zero-shot by sentence similarity`
    : `models/minilm (all-MiniLM-L6-v2, ${MINILM[dtype].label})`,
});
if (new URLSearchParams(location.search).get('dtype') === 'fp32') $('#dtype').value = 'fp32';
const DEFAULTS = {
  ner: { task: 'token-classification', source: 'models/pii/', name: 'models/pii (Rampart PII, 4-bit ONNX)', weights: 'onnx/model_q4.onnx' },
  cls: minilm('cls', $('#dtype').value),
  qa: null,
  sim: minilm('sim', $('#dtype').value),
  pt: null, // the Similarity tab's "pre-training heads" section: the user's own checkpoint
};
const chosen = { ...DEFAULTS };
const loaded = {};
const loading = {};

// `?device=cpu|webgpu|auto` preselects the device switch.
const wanted = new URLSearchParams(location.search).get('device');
if (['auto', 'webgpu', 'cpu'].includes(wanted)) $('#device').value = wanted;
const device = () => $('#device').value;
// `?quantized=f32` computes q4 models on dequantized f32 weights (default: integer kernels).
const quantized = new URLSearchParams(location.search).get('quantized') === 'f32' ? 'f32' : 'int';

/** `WebGPU · <adapter>` or `CPU · simd128`, from a pipeline's backend string. */
function describe(backend, pipe) {
  if (backend.startsWith('gpu')) return `WebGPU · ${pipe?.adapter ?? backend.slice(4)}`;
  const probe = pipe?.info?.probe;
  const slower = probe && !(probe.gpu_ms < probe.cpu_ms);
  const why = slower ? ' (faster than WebGPU here)' : pipe?.gpuFailure ? ' (WebGPU failed, fell back)' : '';
  return `CPU · ${backend.replace(/^cpu-/, '')}${why}`;
}

/** A tab's error, shown next to its loader and run button; `null` clears it. */
function showError(tab, msg) {
  const e = $(`#${tab}-error`);
  e.hidden = !msg;
  e.textContent = msg ?? '';
}

const mb = (n) => (n / 1048576).toFixed(1);

// One progress row per model (per source: two tabs loading the same folder share a row).
const rows = new Map();

function progressRow(want) {
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
      } else if (p.stage === 'compile') {
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

/**
 * The pipeline for `want` and how the tab uses it (`mode`): for a model picked in the
 * classification tab, zero-shot by entailment (an NLI classifier), the classifier's own labels,
 * or zero-shot by similarity (a sentence encoder).
 */
async function open(want, opts) {
  if (want.task === 'pretraining') return { pipe: await pretraining(want.source, opts), mode: 'task' };
  if (want.task !== 'classification') {
    const mode = { 'zero-shot-classification': 'similarity' }[want.task] ?? 'task';
    return { pipe: await pipeline(want.task, want.source, opts), mode };
  }
  const zs = await pipeline('zero-shot-classification', want.source, opts);
  if (zs.info.zero_shot === 'nli') return { pipe: zs, mode: 'nli' };
  if (zs.info.task === 'feature-extraction') return { pipe: zs, mode: 'similarity' };
  if (zs.info.task === 'text-classification') {
    try {
      return { pipe: await pipeline('text-classification', want.source, opts), mode: 'classifier' };
    } finally {
      zs.dispose();
    }
  }
  zs.dispose();
  throw new Error(`this is a ${zs.info.model_type} model with a ${zs.info.task} head; this tab takes a sequence classifier (*ForSequenceClassification), an NLI model or a sentence encoder`);
}

/**
 * Both pre-training pipelines on one checkpoint, each `null` where the model lacks its head
 * (a masked LM has no NSP head, a BertForNextSentencePrediction no MLM head); fails only when
 * neither loads, with the scorer's error.
 */
async function pretraining(source, opts) {
  const [scorer, nsp] = await Promise.allSettled([
    pipeline('text-scoring', source, opts),
    pipeline('next-sentence-prediction', source, opts),
  ]);
  if (scorer.status === 'rejected' && nsp.status === 'rejected') throw scorer.reason;
  const pipes = {
    scorer: scorer.value ?? null,
    nsp: nsp.value ?? null,
    nspError: nsp.reason?.message,
    scorerError: scorer.reason?.message,
  };
  const main = pipes.scorer ?? pipes.nsp;
  return Object.assign(pipes, {
    backend: main.backend, adapter: main.adapter, info: main.info, gpuFailure: main.gpuFailure,
    dispose() {
      pipes.scorer?.dispose();
      pipes.nsp?.dispose();
    },
  });
}

/** Loads the tab's chosen model (once); the returned pipeline is what the tab runs. */
function ensure(tab) {
  const want = chosen[tab];
  if (!want) return Promise.resolve(null);
  if (loaded[tab]?.want === want) return Promise.resolve(loaded[tab].pipe);
  if (loading[tab]?.want === want) return loading[tab].promise;
  const promise = (async () => {
    const row = progressRow(want);
    try {
      const { pipe, mode } = await open(want, { device: device(), quantized, dtype: want.dtype, onProgress: row.update });
      if (chosen[tab] !== want) {
        pipe.dispose();
        return ensure(tab);
      }
      loaded[tab]?.pipe.dispose();
      loaded[tab] = { want, pipe, mode };
      showError(tab, null);
      $('#backend').textContent = describe(pipe.backend, pipe);
      return pipe;
    } catch (e) {
      // Back to what the tab had (or its default), and every view to match it.
      if (chosen[tab] === want) chosen[tab] = loaded[tab]?.want ?? DEFAULTS[tab];
      showError(tab, `Could not load ${want.name}: ${e.message}`);
      throw e;
    } finally {
      row.done();
      delete loading[tab];
      sync(tab);
    }
  })();
  loading[tab] = { want, promise };
  sync(tab);
  return promise;
}

/**
 * Puts a tab's views (model name, options, buttons, code) in line with the model it runs: the
 * loaded one (a model still loading shows in its progress row), else the tab's default.
 */
function sync(tab) {
  const inUse = loaded[tab]?.want ?? DEFAULTS[tab];
  $(`#panel-${tab} .model-name`).textContent = inUse ? inUse.name : 'none loaded';
  if (tab === 'cls') {
    const mode = loaded.cls?.mode ?? 'similarity';
    $('#cls-zero-shot').hidden = inUse === DEFAULTS.cls || inUse.source === 'models/minilm/' && !!inUse.dtype;
    $('#cls-zs-options').hidden = teaching() || mode === 'classifier';
    $('#cls-method').hidden = teaching();
    $('#cls-method').textContent = METHODS[mode];
    $('#cls-method').dataset.method = mode;
  }
  if (tab === 'qa') {
    $('#qa-run').disabled = !loaded.qa;
    $('#qa-notice').hidden = !!loaded.qa;
  }
  if (tab === 'pt') {
    // Each button needs its own head: a masked LM has no NSP head, and the other way round.
    $('#pt-run').disabled = !loaded.pt?.pipe.scorer;
    $('#pt-nsp-run').disabled = !loaded.pt?.pipe.nsp;
    $('#pt-nsp-run').title = loaded.pt && !loaded.pt.pipe.nsp ? `No next-sentence head: ${loaded.pt.pipe.nspError}` : '';
    $('#pt-run').title = loaded.pt && !loaded.pt.pipe.scorer ? `No masked-LM head: ${loaded.pt.pipe.scorerError}` : '';
    $('#pt-notice').hidden = !!loaded.pt;
  }
  code(tab);
}

const METHODS = {
  similarity: 'Zero-shot by sentence similarity: the text and each hypothesis ("This example is {label}.") are embedded and compared. A score is that similarity relative to the other labels (softmax of 20·cosine), not a probability; with Multi-label each label gets sigmoid(20·cosine) on its own, which only ranks: 0.5 means nothing here.',
  nli: 'Zero-shot by entailment (an NLI model, as Hugging Face\'s pipeline): each hypothesis ("This example is {label}.") is judged against the text. Single-label: a probability distribution over the labels. Multi-label: for each label on its own, the probability that the text entails it rather than contradicts it.',
  classifier: 'The model\'s own labels: softmax probabilities of its classification head.',
};

function setLatency(id, result, pipe) {
  const backend = describe(result.backend, pipe);
  $(id).textContent = `${result.wall_ms.toFixed(1)} ms (engine ${result.ms.toFixed(1)} ms, ${backend})`;
  $('#backend').textContent = backend;
}

/**
 * Runs `fn(pipe, watch)` for a tab's button: model first, errors shown, button busy meanwhile.
 * Where the tab has a Cancel button, `watch` ({ signal, onProgress }) shows the windows of a long
 * input as they run and lets the user stop between two.
 */
function action(tab, button, fn) {
  $(button).addEventListener('click', async () => {
    const b = $(button);
    b.disabled = true;
    b.setAttribute('aria-busy', 'true');
    $(`#panel-${tab}`).classList.add('running'); // the previous result dims until this one is in
    const cancel = button.endsWith('-run') && $(button.replace(/-run$/, '-cancel'));
    const ac = new AbortController();
    let windows = null;
    const watch = cancel ? {
      signal: ac.signal,
      onProgress: (p) => {
        windows = p;
        if (p.total > 1) $(`#${tab}-ms`).textContent = `window ${Math.min(p.done + 1, p.total)} of ${p.total}…`;
      },
    } : {};
    try {
      const pipe = await ensure(tab);
      showError(tab, null);
      if (cancel) {
        cancel.hidden = false;
        cancel.onclick = () => ac.abort();
      }
      if (pipe) await fn(pipe, watch);
      code(tab);
    } catch (e) {
      // An error stands alone: no result of an earlier run under it.
      for (const out of OUTPUTS[tab]) $(out).replaceChildren();
      if (tab === 'ner') lastNer = null;
      if (e.name === 'AbortError') $(`#${tab}-ms`).textContent = `Cancelled${windows ? ` after ${windows.done} of ${windows.total} windows` : ''}.`;
      else showError(tab, e.message);
    } finally {
      if (cancel) cancel.hidden = true;
      $(`#panel-${tab}`).classList.remove('running');
      b.disabled = !DEFAULTS[tab] && !loaded[tab];
      b.removeAttribute('aria-busy');
      const panel = $(`#panel-${tab}`);
      panel.dataset.runs = Number(panel.dataset.runs ?? 0) + 1; // tests wait on this
    }
  });
}

function hue(label) {
  let h = 0;
  for (const c of label) h = (h * 31 + c.codePointAt(0)) % 360;
  return h;
}

const OUTPUTS = {
  ner: ['#ner-out', '#ner-table tbody', '#ner-ms'],
  cls: ['#cls-out', '#cls-ms'],
  qa: ['#qa-out', '#qa-ms'],
  sim: ['#sim-out', '#sim-ms'],
  pt: ['#pt-out', '#pt-nsp-out', '#pt-ms'],
};

// --- "Show code": the exact pipeline(...) call each tab makes ---
const js = (v) => {
  if (Array.isArray(v)) return `[${v.map(js).join(', ')}]`;
  if (v && typeof v === 'object') return `{ ${Object.entries(v).map(([k, x]) => `${k}: ${js(x)}`).join(', ')} }`;
  return typeof v === 'string' ? `'${v.replace(/[\\']/g, '\\$&')}'` : String(v);
};

function code(tab) {
  const want = loaded[tab]?.want ?? DEFAULTS[tab];
  const out = $(`#${tab}-code`);
  if (!out) return;
  if (!want) {
    out.textContent = '// load a model first';
    return;
  }
  const src = typeof want.source === 'string' ? `'${want.source}'` : 'files /* the FileList of <input type=file webkitdirectory> */';
  const opts = { device: device(), ...(want.dtype && { dtype: want.dtype }), ...(quantized === 'f32' ? { quantized } : {}) };
  const mode = loaded[tab]?.want === want ? loaded[tab].mode : null;
  const task = want.task === 'classification' ? (mode === 'classifier' ? 'text-classification' : 'zero-shot-classification') : want.task;
  if (tab === 'pt') {
    out.textContent = `import { pipeline } from 'webert';\n\n`
      + `// fluency (a masked-LM head): pseudo-log-likelihoods, each token masked in turn\n`
      + `const scorer = await pipeline('text-scoring', ${src}, ${js(opts)});\n`
      + `const scores = await scorer(sentences); // [{ pseudo_log_likelihood, tokens: [{ token, log_prob, start, end }] }]\n\n`
      + `// next sentence (an NSP head: BertForPreTraining, BertForNextSentencePrediction)\n`
      + `const nsp = await pipeline('next-sentence-prediction', ${src}, ${js(opts)});\n`
      + `const labels = await nsp(${js({ text: $('#pt-a').value, text_pair: $('#pt-b').value })}); // [{ label: 'IsNext' | 'NotNext', score }], likelier first`;
    return;
  }
  const head = `import { pipeline } from 'webert';\n\nconst pipe = await pipeline('${task}', ${src}, ${js(opts)});\n`;
  const call = {
    ner: () => `const entities = await pipe(text, ${js({ aggregation_strategy: $('#ner-agg').value, ...($('#ner-patterns').checked && { patterns: true }) })});`,
    cls: () => task === 'text-classification'
      ? 'const labels = await pipe(text, { top_k: null, truncation: true }); // truncation: texts past the model\'s limit are cut, not refused'
      : `const { labels, scores } = await pipe(text, ${js(clsLabels())}, ${js({ multi_label: $('#cls-multi').checked, hypothesis_template: $('#cls-template').value, truncation: true })});\n// how they were scored (.method): '${mode ?? 'similarity'}'; truncation: texts past the model's limit are cut, not refused`,
    qa: () => 'const answers = await pipe(question, context, { top_k: 3 });',
    sim: () => 'const ranked = await pipe.rank(query, sentences); // [{ corpus_id, score, text }], best first',
  }[tab];
  out.textContent = head + call();
}

const clsLabels = () => $('#cls-labels').value.split(',').map((l) => l.trim()).filter(Boolean);

// --- PII / NER ---
let lastNer = null;

/** The package's redaction of the last result, its replacements shown as chips. */
function renderRedacted(out, text, entities) {
  const redacted = redact(text, entities, { style: $('#ner-style').value });
  let at = 0;
  for (const m of redacted.matchAll(/\[([A-Z][A-Z0-9_]*?)(?:_\d+)?\]|█████/g)) {
    out.append(redacted.slice(at, m.index));
    const label = m[1] ?? 'REDACTED';
    out.append(el('mark', { class: 'redacted', style: `--hue: ${hue(label)}`, dataset: { label } }, m[0]));
    at = m.index + m[0].length;
  }
  out.append(redacted.slice(at));
}

function renderEntities() {
  const out = $('#ner-out');
  const body = $('#ner-table tbody');
  out.replaceChildren();
  body.replaceChildren();
  if (!lastNer) return;
  const { text, entities } = lastNer;
  const redacting = $('#ner-redact').checked;
  if (redacting) renderRedacted(out, text, entities);
  let at = 0;
  for (const e of entities) {
    const label = e.entity_group ?? e.entity;
    const span = text.slice(e.start, e.end);
    const source = e.source ?? 'model';
    body.append(el('tr', { dataset: { source } }, el('td', {}, label), el('td', { class: 'text' }, span), el('td', { class: 'num' }, e.score.toFixed(3)), el('td', { class: 'num' }, `${e.start}–${e.end}`), el('td', {}, source)));
    if (redacting || e.start < at) continue; // overlapping spans cannot both be marked
    out.append(text.slice(at, e.start));
    out.append(el('mark', {
      style: `--hue: ${hue(label.replace(/^[BI]-/, ''))}`,
      title: `${label} ${e.score.toFixed(3)} (${source})`,
      dataset: { label, start: e.start, end: e.end, score: e.score, source, tag: `${label} ${e.score.toFixed(2)}` },
    }, span));
    at = e.end;
  }
  if (!redacting) out.append(text.slice(at));
  $('#ner-table').hidden = entities.length === 0;
  out.dataset.count = entities.length;
}

action('ner', '#ner-run', async (ner, watch) => {
  const text = $('#ner-text').value;
  const entities = await ner(text, { aggregation_strategy: $('#ner-agg').value, patterns: $('#ner-patterns').checked, ...watch });
  lastNer = { text, entities };
  renderEntities();
  setLatency('#ner-ms', entities, ner);
});
$('#ner-redact').addEventListener('change', renderEntities);
$('#ner-agg').addEventListener('change', () => code('ner'));
$('#ner-patterns').addEventListener('change', () => code('ner'));
$('#ner-style').addEventListener('change', renderEntities);

// --- Classification ---
function renderBars(list, items) {
  $(list).replaceChildren(...items.map(({ label, score, dataset }) =>
    el('li', { dataset: { ...dataset, score } },
      el('span', { class: 'label' }, label),
      el('span', { class: 'score' }, score.toFixed(3)),
      el('span', { class: 'bar', style: `--w: ${Math.max(0, Math.min(1, score))}` }))));
}

action('cls', '#cls-run', async (model, watch) => {
  const text = $('#cls-text').value;
  const clf = teaching() ? await taught(model) : model;
  const result = teaching() || loaded.cls.mode === 'classifier'
    ? await clf(text, { top_k: null, truncation: true, ...(teaching() ? {} : watch) })
    : await clf(text, clsLabels(), { multi_label: $('#cls-multi').checked, hypothesis_template: $('#cls-template').value, truncation: true, ...watch });
  // Zero-shot answers `{ sequence, labels, scores }`, a classifier `[{ label, score }]`.
  const rows = Array.isArray(result) ? result : result.labels.map((label, i) => ({ label, score: result.scores[i] }));
  renderBars('#cls-out', rows.map((r) => ({ ...r, dataset: { label: r.label } })));
  $('#cls-out').dataset.method = result.method ?? 'classifier';
  setLatency('#cls-ms', result, clf);
});
$('#cls-zero-shot').addEventListener('click', () => {
  chosen.cls = DEFAULTS.cls;
  ensure('cls').catch(() => {});
});
for (const id of ['#cls-labels', '#cls-template', '#cls-multi']) $(id).addEventListener('change', () => code('cls'));

// --- Classification, Teach mode: a head trained on the tab's model, kept in IndexedDB ---
function teaching() {
  return $('#cls-teach-mode').checked;
}
let teach = null; // { clf, want }: the trained classifier and the model it runs on

function syncMode() {
  $('#teach').hidden = !teaching();
  $('#cls-zs-options').hidden = teaching() || (loaded.cls?.mode ?? 'similarity') === 'classifier';
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
  teach?.clf.dispose();
  teach = { clf, want: chosen.cls };
  await headStore.put({ head: clf.exportHead(), examples: examples ?? $('#teach-examples').value }).catch(() => {});
}

/** The classifier for Teach mode: the one trained here, else the head saved in this browser. */
async function taught(model) {
  if (teach?.want === chosen.cls) return teach.clf;
  const saved = await headStore.get().catch(() => null);
  if (!saved) throw new Error('Teach mode: train a classifier first (or load a head).');
  const clf = await pipeline('text-classification', chosen.cls.source, { head: saved.head, device: device(), quantized, dtype: chosen.cls.dtype });
  teach?.clf.dispose();
  teach = { clf, want: chosen.cls };
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
  if (!teach) return;
  const a = el('a', { href: URL.createObjectURL(new Blob([teach.clf.exportHead()])), download: 'classifier-head.safetensors' });
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
});

$('#teach-load').addEventListener('change', async () => {
  const file = $('#teach-load').files[0];
  if (!file) return;
  try {
    await ensure('cls');
    const clf = await pipeline('text-classification', chosen.cls.source, { head: file, device: device(), quantized, dtype: chosen.cls.dtype });
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

// --- Question answering ---
action('qa', '#qa-run', async (qa, watch) => {
  const context = $('#qa-context').value;
  const answers = await qa($('#qa-question').value, context, { top_k: 3, ...watch });
  const out = $('#qa-out');
  const best = answers[0];
  if (!best) {
    out.replaceChildren('No answer found.');
  } else {
    out.replaceChildren(
      context.slice(0, best.start),
      el('mark', { style: '--hue: 140', dataset: { start: best.start, end: best.end, score: best.score, tag: best.score.toFixed(2) } }, context.slice(best.start, best.end)),
      context.slice(best.end),
      el('ol', {}, ...answers.map((a) => el('li', { dataset: { score: a.score } }, `${a.answer || '(no answer)'} — ${a.score.toFixed(3)}`))),
    );
  }
  setLatency('#qa-ms', answers, qa);
});

// --- Similarity ---
action('sim', '#sim-run', async (embed, watch) => {
  const docs = $('#sim-docs').value.split('\n').map((s) => s.trim()).filter(Boolean);
  const ranked = await embed.rank($('#sim-query').value, docs, watch);
  renderBars('#sim-out', ranked.map((r) => ({ label: r.text, score: r.score, dataset: { index: r.corpus_id } })));
  setLatency('#sim-ms', ranked, embed);
});

// --- Similarity tab, BERT's pre-training heads: fluency (PLL) and next sentence ---
action('pt', '#pt-run', async (pt) => {
  if (!pt.scorer) throw new Error(`Fluency needs a masked-LM head: ${pt.scorerError}`);
  const texts = $('#pt-sentences').value.split('\n').map((s) => s.trim()).filter(Boolean);
  if (!texts.length) throw new Error('Enter at least one sentence, one per line.');
  const scores = await pt.scorer(texts);
  const ranked = scores.map((s, i) => ({ ...s, i, text: texts[i] })).sort((a, b) => b.pseudo_log_likelihood - a.pseudo_log_likelihood);
  $('#pt-out').replaceChildren(...ranked.map((r) => {
    const worst = r.tokens.reduce((w, t, k) => (t.log_prob < r.tokens[w].log_prob ? k : w), 0);
    const per = r.tokens.length ? r.pseudo_log_likelihood / r.tokens.length : 0;
    return el('li', { dataset: { index: r.i, pll: r.pseudo_log_likelihood } },
      el('div', { class: 'pll-head' },
        el('span', { class: 'label' }, r.text),
        el('span', { class: 'pll-value', title: 'pseudo-log-likelihood (sum of the tokens\' log-probs); per token in brackets' },
          `${r.pseudo_log_likelihood.toFixed(2)} (${per.toFixed(2)}/token)`)),
      el('div', { class: 'tokens' }, ...r.tokens.map((t, k) => el('span', {
        class: k === worst ? 'token worst' : 'token',
        title: `${r.text.slice(t.start, t.end)}: log p = ${t.log_prob.toFixed(3)}`,
        dataset: { token: t.token, logProb: t.log_prob, start: t.start, end: t.end },
      }, el('span', { class: 'tok' }, t.token), el('span', { class: 'lp' }, t.log_prob.toFixed(2))))));
  }));
  $('#pt-nsp-out').replaceChildren();
  setLatency('#pt-ms', scores, pt.scorer);
});
action('pt', '#pt-nsp-run', async (pt) => {
  if (!pt.nsp) throw new Error(`Next sentence needs an NSP head: ${pt.nspError}`);
  const labels = await pt.nsp({ text: $('#pt-a').value, text_pair: $('#pt-b').value });
  renderBars('#pt-nsp-out', labels.map((l) => ({ ...l, dataset: { label: l.label } })));
  $('#pt-out').replaceChildren();
  setLatency('#pt-ms', labels, pt.nsp);
});
for (const id of ['#pt-a', '#pt-b']) $(id).addEventListener('change', () => code('pt'));

// --- Known-compatible models on the Hugging Face Hub, loaded by id when the page is online ---
// Chosen by their config (architecture and head fit the tab's task); not run by this repository's
// tests, which never reach the internet. q8 (`onnx/model_quantized.onnx`) is transformers.js's
// browser default and the smallest download these repositories all have.
const HUB_MODELS = {
  ner: [{ id: 'Xenova/bert-base-NER', what: 'people, places, organisations (CoNLL-03)' }],
  cls: [{ id: 'Xenova/distilbert-base-uncased-finetuned-sst-2-english', what: 'sentiment, positive / negative' }],
  qa: [{ id: 'Xenova/distilbert-base-cased-distilled-squad', what: 'extractive answers (SQuAD)' }],
  sim: [
    { id: 'Xenova/all-MiniLM-L6-v2', what: 'sentence embeddings' },
    // NomicBERT (rotary positions): 2048 tokens; its card asks for "search_query: " /
    // "search_document: " prefixes, which this tab does not add.
    { id: 'nomic-ai/nomic-embed-text-v1.5', what: 'long-context embeddings (NomicBERT, 2048 tokens)' },
  ],
  // ModernBERT: transformers.js's default fill-mask model, a real masked LM for fluency.
  pt: [{ id: 'onnx-community/ettin-encoder-32m-ONNX', what: 'masked LM for fluency (ModernBERT, Ettin 32M)' }],
};
const HUB_DTYPE = 'q8';
const HUB_WEIGHTS = 'onnx/model_quantized.onnx'; // its file: the size shown before the download
// `?hub=URL` fetches them from another host with the Hub's URL layout (a mirror; the tests' mock).
const hubHost = new URLSearchParams(location.search).get('hub');
if (hubHost) env.remoteHost = hubHost;
const hubName = hubHost ? new URL(hubHost, location.href).host : 'huggingface.co';

function hubModels(tab, task) {
  const note = el('span', { class: 'hub-note' });
  const buttons = HUB_MODELS[tab].map(({ id, what }) => {
    const b = el('button', { type: 'button', class: 'hub-model', dataset: { id }, title: `${id} from ${hubName} (${HUB_DTYPE}); not tested here` }, `${id} — ${what}`);
    b.addEventListener('click', () => choose(tab, task, id, `${id} (Hugging Face Hub, ${HUB_DTYPE})`, HUB_DTYPE, HUB_WEIGHTS));
    return b;
  });
  const update = () => {
    const offline = navigator.onLine === false;
    for (const b of buttons) b.disabled = offline;
    note.textContent = offline
      ? `Unavailable: this page is offline, and these models download from ${hubName}.`
      : `Downloaded from ${hubName} on first use, then cached; known to fit this task, not tested here.`;
  };
  addEventListener('online', update);
  addEventListener('offline', update);
  update();
  return el('div', { class: 'hub' }, el('span', {}, 'Hub models:'), ...buttons, note);
}

// --- Model loaders: URL, folder picker, drag and drop ---
async function filesFromDrop(items) {
  const out = {};
  const read = (entry) => new Promise((ok, err) => entry.file(ok, err));
  const walk = async (dir, prefix) => {
    const reader = dir.createReader();
    for (;;) {
      const batch = await new Promise((ok, err) => reader.readEntries(ok, err));
      if (!batch.length) return;
      for (const e of batch) {
        if (e.isDirectory) await walk(e, `${prefix}${e.name}/`);
        else out[`${prefix}${e.name}`] = await read(e);
      }
    }
  };
  const entries = [...items].map((i) => i.webkitGetAsEntry?.()).filter(Boolean);
  if (entries.length === 1 && entries[0].isDirectory) {
    await walk(entries[0], '');
    return { files: out, name: entries[0].name };
  }
  for (const e of entries) {
    if (e.isDirectory) await walk(e, `${e.name}/`);
    else out[e.name] = await read(e);
  }
  return { files: out, name: 'dropped files' };
}

function choose(tab, task, source, name, dtype, weights) {
  chosen[tab] = { task, source, name, dtype, weights };
  for (const out of OUTPUTS[tab]) $(out).replaceChildren(); // results of the previous model
  ensure(tab).catch(() => {});
}

for (const div of document.querySelectorAll('.loader')) {
  const tab = div.closest('[data-panel], [role=tabpanel]').id.replace('panel-', '');
  const task = div.dataset.task;
  const url = el('input', { type: 'text', 'aria-label': 'Model folder URL', placeholder: 'Folder URL (https://…/my-model/) or Hub model id (ORG/NAME)', value: div.dataset.default ?? '' });
  const load = el('button', { type: 'button' }, 'Load URL');
  const pick = el('input', { type: 'file', webkitdirectory: true, multiple: true });
  const drop = el('div', { class: 'drop', tabindex: '0', role: 'note' }, 'or drop a model folder here');
  div.append(el('label', { class: 'url' }, 'URL', url), load, el('label', {}, 'Local folder ', pick), drop);
  load.addEventListener('click', () => url.value.trim() && choose(tab, task, url.value.trim(), url.value.trim()));
  url.addEventListener('keydown', (e) => e.key === 'Enter' && load.click());
  pick.addEventListener('change', () => {
    if (!pick.files.length) return;
    choose(tab, task, [...pick.files], pick.files[0].webkitRelativePath.split('/')[0] || 'local folder');
  });
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  if (HUB_MODELS[tab]) div.append(hubModels(tab, task));
  drop.addEventListener('drop', async (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    const { files, name } = await filesFromDrop(e.dataTransfer.items);
    choose(tab, task, files, name);
  });
}

// --- Tabs (arrow keys move between them) and device switch ---
const tabs = [...document.querySelectorAll('[role=tab]')];
function select(tab) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute('aria-selected', on);
    t.tabIndex = on ? 0 : -1;
    document.getElementById(t.getAttribute('aria-controls')).hidden = !on;
  }
  ensure(tab.id.replace('tab-', '')).catch(() => {});
}
for (const t of tabs) {
  t.addEventListener('click', () => select(t));
  t.addEventListener('keydown', (e) => {
    const i = tabs.indexOf(t);
    const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
    if (next === undefined) return;
    e.preventDefault();
    const to = tabs[(next + tabs.length) % tabs.length];
    to.focus();
    select(to);
  });
}

$('#device').addEventListener('change', () => {
  for (const tab of Object.keys(loaded)) {
    loaded[tab].pipe.dispose();
    delete loaded[tab];
    sync(tab);
  }
  ensure(tabs.find((t) => t.getAttribute('aria-selected') === 'true').id.replace('tab-', '')).catch(() => {});
});

// The MiniLM weights: each choice with its download size (from the file's headers); a q8 file
// that set-up did not make leaves f32 only. Tabs on the default MiniLM reload with the new one.
for (const opt of $('#dtype').options) {
  fetch(new URL(MINILM[opt.value].weights, new URL('models/minilm/', location.href)), { method: 'HEAD' }).then((r) => {
    const n = Number(r.headers.get('content-length'));
    if (r.ok) {
      opt.textContent = `${MINILM[opt.value].label}${opt.value === 'q8' ? ' (8-bit)' : ''}${n ? ` · ${mb(n)} MB` : ''}`;
      opt.dataset.size = n;
    }
    if (r.status !== 404 || opt.value !== 'q8') return;
    opt.disabled = true;
    opt.textContent = 'q8: not built here (run scripts/setup.sh)';
    if ($('#dtype').value === 'q8') {
      $('#dtype').value = 'fp32';
      $('#dtype').dispatchEvent(new Event('change'));
    }
  }, () => {}); // offline: the choice stays (the package's cache may hold either)
}
$('#dtype').addEventListener('change', () => {
  const dtype = $('#dtype').value;
  const current = tabs.find((t) => t.getAttribute('aria-selected') === 'true').id.replace('tab-', '');
  for (const tab of ['cls', 'sim']) {
    const was = DEFAULTS[tab];
    DEFAULTS[tab] = minilm(tab, dtype);
    if (chosen[tab] === was) chosen[tab] = DEFAULTS[tab];
    sync(tab);
    if (tab === current || loaded[tab]) ensure(tab).catch(() => {});
  }
});

webgpuAdapter().then((a) => {
  // No adapter: the WebGPU choice could only fail.
  const any = $('#device option[value=webgpu]');
  any.disabled = !a;
  if (!a) any.textContent = 'WebGPU (not available here)';
  if (!a && device() === 'webgpu') {
    $('#device').value = 'auto';
    $('#device').dispatchEvent(new Event('change'));
  }
  const w = $('#webgpu');
  w.dataset.available = !!a;
  w.dataset.fallback = !!a?.isFallbackAdapter;
  w.textContent = !a
    ? 'WebGPU: not available in this browser (CPU runs)'
    : a.isFallbackAdapter
      ? `WebGPU: ${a.name} is a software fallback adapter; Auto uses the CPU (faster)`
      : `WebGPU: ${a.name}`;
});

if ('serviceWorker' in navigator) navigator.serviceWorker.register('sw.js').catch(() => {});
for (const tab of Object.keys(DEFAULTS)) sync(tab);
ensure('ner').catch(() => {});
