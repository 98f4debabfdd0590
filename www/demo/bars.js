import { $, el } from './dom.js';

export function renderBars(list, items) {
  $(list).replaceChildren(...items.map(({ label, score, dataset }) =>
    el('li', { dataset: { ...dataset, score } },
      el('span', { class: 'label' }, label),
      el('span', { class: 'score' }, score.toFixed(3)),
      el('span', { class: 'bar', style: `--w: ${Math.max(0, Math.min(1, score))}` }))));
}
