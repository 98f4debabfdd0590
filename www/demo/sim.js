// The similarity tab.
import { action } from './action.js';
import { renderBars } from './bars.js';
import { code } from './code.js';
import { $, el } from './dom.js';
import { setLatency } from './latency.js';

action('sim', '#sim-run', async (embed, watch) => {
  const docs = $('#sim-docs').value.split('\n').map((s) => s.trim()).filter(Boolean);
  const ranked = await embed.rank($('#sim-query').value, docs, watch);
  renderBars('#sim-out', ranked.map((r) => ({ label: r.text, score: r.score, dataset: { index: r.corpus_id } })));
  setLatency('#sim-ms', ranked, embed);
});

// Similarity tab, BERT's pre-training heads: fluency (PLL) and next sentence.
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
