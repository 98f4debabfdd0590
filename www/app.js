// The demo page: four tabs, each with a model (loaded on first use, from a URL, a picked folder
// or a dropped folder) and a task run through the webert package in a Web Worker. The parts live
// in demo/; this file wires them: tabs, device switch, start-up.
import { webgpuAdapter } from './pkg/webert.js';
import { DEFAULTS } from './demo/defaults.js';
import { $ } from './demo/dom.js';
import { dtypeSwitch } from './demo/dtype.js';
import { ensure, sync } from './demo/load.js';
import { device } from './demo/settings.js';
import { state } from './demo/state.js';
import './demo/ner.js';
import './demo/cls.js';
import './demo/qa.js';
import './demo/sim.js';
import './demo/loaders.js';

// --- Tabs (arrow keys move between them) and device switch ---
const tabs = [...document.querySelectorAll('[role=tab]')];
const selected = () => tabs.find((t) => t.getAttribute('aria-selected') === 'true').id.replace('tab-', '');
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
  for (const tab of Object.keys(state.loaded)) {
    state.loaded[tab].pipe.dispose();
    delete state.loaded[tab];
    sync(tab);
  }
  ensure(selected()).catch(() => {});
});

dtypeSwitch(selected);

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
