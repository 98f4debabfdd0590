import { code } from './code.js';
import { DEFAULTS } from './defaults.js';
import { $ } from './dom.js';
import { showError } from './errors.js';
import { ensure } from './load.js';
import { clearOutputs } from './outputs.js';
import { state } from './state.js';

/**
 * Runs `fn(pipe, watch)` for a tab's button: model first, errors shown, button busy meanwhile.
 * Where the tab has a Cancel button, `watch` ({ signal, onProgress }) shows the windows of a long
 * input as they run and lets the user stop between two.
 */
export function action(tab, button, fn) {
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
      clearOutputs(tab);
      if (tab === 'ner') state.lastNer = null;
      if (e.name === 'AbortError') $(`#${tab}-ms`).textContent = `Cancelled${windows ? ` after ${windows.done} of ${windows.total} windows` : ''}.`;
      else showError(tab, e.message);
    } finally {
      if (cancel) cancel.hidden = true;
      $(`#panel-${tab}`).classList.remove('running');
      b.disabled = !DEFAULTS[tab] && !state.loaded[tab];
      b.removeAttribute('aria-busy');
      const panel = $(`#panel-${tab}`);
      panel.dataset.runs = Number(panel.dataset.runs ?? 0) + 1; // tests wait on this
    }
  });
}
