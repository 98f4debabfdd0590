// The PII / NER tab.
import { redact } from '../pkg/webert.js';
import { action } from './action.js';
import { code } from './code.js';
import { $, el } from './dom.js';
import { setLatency } from './latency.js';
import { state } from './state.js';

function hue(label) {
  let h = 0;
  for (const c of label) h = (h * 31 + c.codePointAt(0)) % 360;
  return h;
}

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
  if (!state.lastNer) return;
  const { text, entities } = state.lastNer;
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
  state.lastNer = { text, entities };
  renderEntities();
  setLatency('#ner-ms', entities, ner);
});
$('#ner-redact').addEventListener('change', renderEntities);
$('#ner-agg').addEventListener('change', () => code('ner'));
$('#ner-patterns').addEventListener('change', () => code('ner'));
$('#ner-style').addEventListener('change', renderEntities);
