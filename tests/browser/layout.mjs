// Layout checks of the demo page, shared by the Chromium tests (teach.test.mjs) and the
// three-engine test (engines.test.mjs). `layoutProblems` runs in the page (pass it to any
// driver's evaluate with a panel selector) and returns what looks broken, each list empty when
// the layout is right:
//   squeezed  text blocks of four or more words narrower than 12em (one word a line)
//   apart     controls not beside their label (a switch's checkbox, radio or select on
//             another line than the start of its text)
//   tall      switch labels taller than two lines
//   radios    radio buttons drawn wider than 40 px or not at all
//   overflow  how far the page is wider than the viewport (<= 0 is right)
//   outside   shown elements of the panel reaching past the viewport's right edge
import assert from 'node:assert/strict';

export function layoutProblems(panel) {
  const root = document.querySelector(panel);
  const shown = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden' && !e.closest('[hidden]');
  const em = parseFloat(getComputedStyle(root).fontSize);
  const short = (e) => e.textContent.trim().replace(/\s+/g, ' ').slice(0, 40);
  const squeezed = [...root.querySelectorAll('p, label, li')].filter(shown)
    .filter((e) => e.textContent.trim().split(/\s+/).length >= 4 && e.getBoundingClientRect().width < 12 * em)
    .map(short);
  const apart = [];
  const tall = [];
  for (const l of [...root.querySelectorAll('label.switch')].filter(shown)) {
    if (l.getBoundingClientRect().height > 2 * 1.6 * parseFloat(getComputedStyle(l).fontSize)) tall.push(short(l));
    const control = l.querySelector('input:not([type=file]), select');
    const text = [...l.childNodes].find((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
    if (!control || !shown(control) || !text) continue;
    const range = document.createRange();
    range.selectNodeContents(text);
    const c = control.getBoundingClientRect();
    // The control's line overlaps the text's first line (beside it, before or after).
    const lines = [...range.getClientRects()];
    const line = control.compareDocumentPosition(text) & Node.DOCUMENT_POSITION_FOLLOWING ? lines[0] : lines.at(-1);
    if (line && (c.bottom <= line.top || c.top >= line.bottom)) apart.push(short(l));
  }
  const radios = [...root.querySelectorAll('input[type=radio]')].filter(shown).map((e) => e.getBoundingClientRect().width).filter((w) => !(w > 0 && w < 40));
  const vw = document.documentElement.clientWidth;
  const outside = [...root.querySelectorAll('*')].filter(shown)
    .filter((e) => e.getBoundingClientRect().right > vw + 1 && !e.parentElement.closest('pre'))
    .map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}`).slice(0, 5);
  return { squeezed, apart, tall, radios, outside, overflow: document.documentElement.scrollWidth - window.innerWidth };
}

/** Asserts `layoutProblems`'s result `r` is clean; `what` names the view. */
export function assertLayout(what, r) {
  assert.deepEqual(r.squeezed, [], `${what}: squeezed text`);
  assert.deepEqual(r.apart, [], `${what}: controls apart from their labels`);
  assert.deepEqual(r.tall, [], `${what}: wrapped switch labels`);
  assert.deepEqual(r.radios, [], `${what}: radio widths`);
  assert.deepEqual(r.outside, [], `${what}: past the right edge`);
  assert.ok(r.overflow <= 0, `${what}: the page is ${r.overflow} px wider than the viewport`);
}
