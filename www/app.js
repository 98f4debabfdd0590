// The demo page: four tabs, each with a model (loaded on first use, from a URL, a picked folder
// or a dropped folder) and a task run through the webert package in a Web Worker.
import { pipeline, train, webgpuAdapter } from './pkg/webert.js';

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

// Each tab's model: what to load by default and what is loaded now.
const DEFAULTS = {
  ner: { task: 'token-classification', source: 'models/pii/', name: 'models/pii (Rampart PII, 4-bit ONNX)' },
  cls: { task: 'zero-shot-classification', source: 'models/minilm/', name: 'models/minilm, zero-shot by sentence similarity' },
  qa: null,
  sim: { task: 'feature-extraction', source: 'models/minilm/', name: 'models/minilm (all-MiniLM-L6-v2)' },
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

function showError(msg) {
  const e = $('#error');
  e.hidden = !msg;
  e.textContent = msg ?? '';
}

const mb = (n) => (n / 1048576).toFixed(1);
let activeLoads = 0;

function onProgress(name) {
  return (p) => {
    const label = $('#progress-label');
    const bar = $('#progress');
    if (p.stage === 'download') {
      label.textContent = `Downloading ${name}: ${mb(p.bytes)} / ${p.total ? mb(p.total) : '?'} MB${p.cached ? ' (cached)' : ''}`;
      bar.max = p.total || 1;
      bar.value = p.bytes;
    } else if (p.stage === 'compile') {
      label.textContent = `Preparing ${name}…`;
      bar.removeAttribute('value');
    } else if (p.stage === 'upload') {
      label.textContent = `Setting up WebGPU for ${name}…`;
      bar.removeAttribute('value');
    } else if (p.stage === 'ready') {
      label.textContent = `${name} ready`;
      bar.max = 1;
      bar.value = 1;
    }
  };
}

/** Loads the tab's chosen model (once); the returned pipeline is what the tab runs. */
function ensure(tab) {
  const want = chosen[tab];
  if (!want) return Promise.resolve(null);
  if (loaded[tab]?.want === want) return Promise.resolve(loaded[tab].pipe);
  if (loading[tab]?.want === want) return loading[tab].promise;
  const promise = (async () => {
    activeLoads++;
    $('#load').hidden = false;
    showError(null);
    try {
      const pipe = await pipeline(want.task, want.source, { device: device(), quantized, onProgress: onProgress(want.name) });
      if (chosen[tab] !== want) {
        pipe.dispose();
        return ensure(tab);
      }
      loaded[tab]?.pipe.dispose();
      loaded[tab] = { want, pipe };
      $(`#panel-${tab} .model-name`).textContent = want.name;
      $('#backend').textContent = describe(pipe.backend, pipe);
      return pipe;
    } catch (e) {
      if (chosen[tab] === want && want !== DEFAULTS[tab]) chosen[tab] = loaded[tab]?.want ?? DEFAULTS[tab];
      showError(`Could not load ${want.name}: ${e.message}`);
      throw e;
    } finally {
      delete loading[tab];
      if (--activeLoads === 0) $('#load').hidden = true;
    }
  })();
  loading[tab] = { want, promise };
  return promise;
}

function setLatency(id, result, pipe) {
  const backend = describe(result.backend, pipe);
  $(id).textContent = `${result.wall_ms.toFixed(1)} ms (engine ${result.ms.toFixed(1)} ms, ${backend})`;
  $('#backend').textContent = backend;
}

/** Runs `fn` for a tab's button: model first, errors shown, button busy meanwhile. */
function action(tab, button, fn) {
  $(button).addEventListener('click', async () => {
    const b = $(button);
    b.disabled = true;
    b.setAttribute('aria-busy', 'true');
    try {
      const pipe = await ensure(tab);
      showError(null);
      if (pipe) await fn(pipe);
    } catch (e) {
      showError(e.message);
    } finally {
      b.disabled = tab === 'qa' && !loaded.qa;
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

// --- PII / NER ---
let lastNer = null;

function renderEntities() {
  const out = $('#ner-out');
  const body = $('#ner-table tbody');
  out.replaceChildren();
  body.replaceChildren();
  if (!lastNer) return;
  const { text, entities } = lastNer;
  const redact = $('#ner-redact').checked;
  let at = 0;
  for (const e of entities) {
    const label = e.entity_group ?? e.entity;
    if (e.start < at) continue; // overlapping spans cannot both be marked
    out.append(text.slice(at, e.start));
    const span = text.slice(e.start, e.end);
    out.append(el('mark', {
      class: redact ? 'redacted' : null,
      style: `--hue: ${hue(label.replace(/^[BI]-/, ''))}`,
      title: `${label} ${e.score.toFixed(3)}`,
      dataset: { label, start: e.start, end: e.end, score: e.score, tag: `${label} ${e.score.toFixed(2)}` },
    }, redact ? `[${label}]` : span));
    body.append(el('tr', {}, el('td', {}, label), el('td', {}, span), el('td', {}, e.score.toFixed(3)), el('td', {}, `${e.start}–${e.end}`)));
    at = e.end;
  }
  out.append(text.slice(at));
  $('#ner-table').hidden = entities.length === 0;
  out.dataset.count = entities.length;
}

action('ner', '#ner-run', async (ner) => {
  const text = $('#ner-text').value;
  const entities = await ner(text, { aggregation_strategy: $('#ner-agg').value });
  lastNer = { text, entities };
  renderEntities();
  setLatency('#ner-ms', entities, ner);
});
$('#ner-redact').addEventListener('change', renderEntities);

// --- Classification ---
function renderBars(list, items) {
  $(list).replaceChildren(...items.map(({ label, score, dataset }) =>
    el('li', { dataset: { ...dataset, score } },
      el('span', { class: 'label' }, label),
      el('span', { class: 'score' }, score.toFixed(3)),
      el('span', { class: 'bar', style: `--w: ${Math.max(0, Math.min(1, score))}` }))));
}

action('cls', '#cls-run', async (model) => {
  const text = $('#cls-text').value;
  const clf = teaching() ? await taught(model) : model;
  const result = !teaching() && chosen.cls.task === 'zero-shot-classification'
    ? await clf(text, $('#cls-labels').value, { multi_label: $('#cls-multi').checked })
    : await clf(text, { top_k: null });
  renderBars('#cls-out', result.map((r) => ({ ...r, dataset: { label: r.label } })));
  setLatency('#cls-ms', result, clf);
});
$('#cls-zero-shot').addEventListener('click', () => {
  chosen.cls = DEFAULTS.cls;
  $('#cls-zero-shot').hidden = true;
  $('#cls-zs-options').hidden = false;
  ensure('cls').catch(() => {});
});

// --- Classification, Teach mode: a head trained on the tab's model, kept in IndexedDB ---
const teaching = () => $('#cls-teach-mode').checked;
let teach = null; // { clf, want }: the trained classifier and the model it runs on

function syncMode() {
  $('#teach').hidden = !teaching();
  $('#cls-zs-options').hidden = teaching() || chosen.cls.task !== 'zero-shot-classification';
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
  const clf = await pipeline('text-classification', chosen.cls.source, { head: saved.head, device: device(), quantized });
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
    const clf = await pipeline('text-classification', chosen.cls.source, { head: file, device: device(), quantized });
    await keep(clf);
    showHead(clf, `Loaded ${file.name}`);
    showError(null);
  } catch (e) {
    showError(`Could not load the head: ${e.message}`);
  }
});

headStore.get().then((saved) => {
  if (!saved) return;
  $('#teach-examples').value = saved.examples;
  $('#teach-status').textContent = 'A head trained earlier is saved in this browser.';
}, () => {});

// --- Question answering ---
action('qa', '#qa-run', async (qa) => {
  const context = $('#qa-context').value;
  const answers = await qa($('#qa-question').value, context, { top_k: 3 });
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
action('sim', '#sim-run', async (embed) => {
  const docs = $('#sim-docs').value.split('\n').map((s) => s.trim()).filter(Boolean);
  const ranked = await embed.rank($('#sim-query').value, docs);
  renderBars('#sim-out', ranked.map((r) => ({ label: r.text, score: r.score, dataset: { index: r.corpus_id } })));
  setLatency('#sim-ms', ranked, embed);
});

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

function choose(tab, task, source, name) {
  chosen[tab] = { task, source, name };
  if (tab === 'cls') {
    $('#cls-zero-shot').hidden = false;
    $('#cls-zs-options').hidden = true;
  }
  ensure(tab).then(() => {
    if (tab === 'qa') {
      $('#qa-run').disabled = false;
      $('#qa-notice').hidden = true;
    }
  }, () => {});
}

for (const div of document.querySelectorAll('.loader')) {
  const tab = div.closest('[role=tabpanel]').id.replace('panel-', '');
  const task = div.dataset.task;
  const url = el('input', { type: 'text', 'aria-label': 'Model folder URL', placeholder: 'Model folder URL, e.g. https://…/my-model/', value: div.dataset.default ?? '' });
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
  }
  ensure(tabs.find((t) => t.getAttribute('aria-selected') === 'true').id.replace('tab-', '')).catch(() => {});
});

webgpuAdapter().then((a) => {
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
ensure('ner').catch(() => {});
