import { code } from './code.js';
import { METHODS, teaching } from './cls-mode.js';
import { DEFAULTS } from './defaults.js';
import { $ } from './dom.js';
import { showError } from './errors.js';
import { describe } from './latency.js';
import { open } from './open.js';
import { clearOutputs } from './outputs.js';
import { progressRow } from './progress.js';
import { device, quantized } from './settings.js';
import { state } from './state.js';

/** Loads the tab's chosen model (once); the returned pipeline is what the tab runs. */
export function ensure(tab) {
  const want = state.chosen[tab];
  if (!want) return Promise.resolve(null);
  if (state.loaded[tab]?.want === want) return Promise.resolve(state.loaded[tab].pipe);
  if (state.loading[tab]?.want === want) return state.loading[tab].promise;
  const promise = (async () => {
    const row = progressRow(want);
    try {
      const { pipe, mode } = await open(want, { device: device(), quantized, dtype: want.dtype, onProgress: row.update });
      if (state.chosen[tab] !== want) {
        pipe.dispose();
        return ensure(tab);
      }
      state.loaded[tab]?.pipe.dispose();
      state.loaded[tab] = { want, pipe, mode };
      showError(tab, null);
      $('#backend').textContent = describe(pipe.backend, pipe);
      return pipe;
    } catch (e) {
      // Back to what the tab had (or its default), and every view to match it.
      if (state.chosen[tab] === want) state.chosen[tab] = state.loaded[tab]?.want ?? DEFAULTS[tab];
      showError(tab, `Could not load ${want.name}: ${e.message}`);
      throw e;
    } finally {
      row.done();
      delete state.loading[tab];
      sync(tab);
    }
  })();
  state.loading[tab] = { want, promise };
  sync(tab);
  return promise;
}

/**
 * Puts a tab's views (model name, options, buttons, code) in line with the model it runs: the
 * loaded one (a model still loading shows in its progress row), else the tab's default.
 */
export function sync(tab) {
  const inUse = state.loaded[tab]?.want ?? DEFAULTS[tab];
  $(`#panel-${tab} .model-name`).textContent = inUse ? inUse.name : 'none loaded';
  if (tab === 'cls') {
    const mode = state.loaded.cls?.mode ?? 'similarity';
    $('#cls-zero-shot').hidden = inUse === DEFAULTS.cls || inUse.source === 'models/minilm/' && !!inUse.dtype;
    $('#cls-zs-options').hidden = teaching() || mode === 'classifier';
    $('#cls-method').hidden = teaching();
    $('#cls-method').textContent = METHODS[mode];
    $('#cls-method').dataset.method = mode;
  }
  if (tab === 'qa') {
    $('#qa-run').disabled = !state.loaded.qa;
    $('#qa-notice').hidden = !!state.loaded.qa;
  }
  if (tab === 'pt') {
    // Each button needs its own head: a masked LM has no NSP head, and the other way round.
    $('#pt-run').disabled = !state.loaded.pt?.pipe.scorer;
    $('#pt-nsp-run').disabled = !state.loaded.pt?.pipe.nsp;
    $('#pt-nsp-run').title = state.loaded.pt && !state.loaded.pt.pipe.nsp ? `No next-sentence head: ${state.loaded.pt.pipe.nspError}` : '';
    $('#pt-run').title = state.loaded.pt && !state.loaded.pt.pipe.scorer ? `No masked-LM head: ${state.loaded.pt.pipe.scorerError}` : '';
    $('#pt-notice').hidden = !!state.loaded.pt;
  }
  code(tab);
}

export function choose(tab, task, source, name, dtype, weights) {
  state.chosen[tab] = { task, source, name, dtype, weights };
  clearOutputs(tab); // results of the previous model
  ensure(tab).catch(() => {});
}
