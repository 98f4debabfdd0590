import { $ } from './dom.js';

/** A tab's error, shown next to its loader and run button; `null` clears it. */
export function showError(tab, msg) {
  const e = $(`#${tab}-error`);
  e.hidden = !msg;
  e.textContent = msg ?? '';
}
