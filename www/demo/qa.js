// The question answering tab.
import { action } from './action.js';
import { $, el } from './dom.js';
import { setLatency } from './latency.js';

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
