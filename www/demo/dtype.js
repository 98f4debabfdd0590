import { DEFAULTS, MINILM, minilm } from './defaults.js';
import { $ } from './dom.js';
import { ensure, sync } from './load.js';
import { mb } from './progress.js';
import { state } from './state.js';

/** The MiniLM weights switch (`#dtype`); `selected()` is the id of the tab on show. */
export function dtypeSwitch(selected) {
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
    const current = selected();
    for (const tab of ['cls', 'sim']) {
      const was = DEFAULTS[tab];
      DEFAULTS[tab] = minilm(tab, dtype);
      if (state.chosen[tab] === was) state.chosen[tab] = DEFAULTS[tab];
      sync(tab);
      if (tab === current || state.loaded[tab]) ensure(tab).catch(() => {});
    }
  });
}
