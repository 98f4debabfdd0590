import { $ } from './dom.js';

export const OUTPUTS = {
  ner: ['#ner-out', '#ner-table tbody', '#ner-ms'],
  cls: ['#cls-out', '#cls-ms'],
  qa: ['#qa-out', '#qa-ms'],
  sim: ['#sim-out', '#sim-ms'],
  pt: ['#pt-out', '#pt-nsp-out', '#pt-ms'],
};

export function clearOutputs(tab) {
  for (const out of OUTPUTS[tab]) $(out).replaceChildren();
}
