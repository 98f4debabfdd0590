// "Show code": the exact pipeline(...) call each tab makes.
import { DEFAULTS } from './defaults.js';
import { clsLabels } from './cls-mode.js';
import { $ } from './dom.js';
import { device, quantized } from './settings.js';
import { state } from './state.js';

const js = (v) => {
  if (Array.isArray(v)) return `[${v.map(js).join(', ')}]`;
  if (v && typeof v === 'object') return `{ ${Object.entries(v).map(([k, x]) => `${k}: ${js(x)}`).join(', ')} }`;
  return typeof v === 'string' ? `'${v.replace(/[\\']/g, '\\$&')}'` : String(v);
};

export function code(tab) {
  const want = state.loaded[tab]?.want ?? DEFAULTS[tab];
  const out = $(`#${tab}-code`);
  if (!out) return;
  if (!want) {
    out.textContent = '// load a model first';
    return;
  }
  const src = typeof want.source === 'string' ? `'${want.source}'` : 'files /* the FileList of <input type=file webkitdirectory> */';
  const opts = { device: device(), ...(want.dtype && { dtype: want.dtype }), ...(quantized === 'f32' ? { quantized } : {}) };
  const mode = state.loaded[tab]?.want === want ? state.loaded[tab].mode : null;
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
