import { env } from '../pkg/webert.js';
import { el } from './dom.js';
import { choose } from './load.js';

// Known-compatible models on the Hugging Face Hub, loaded by id when the page is online.
// Chosen by their config (architecture and head fit the tab's task); not run by this repository's
// tests, which never reach the internet. q8 (`onnx/model_quantized.onnx`) is transformers.js's
// browser default and the smallest download these repositories all have.
export const HUB_MODELS = {
  ner: [{ id: 'Xenova/bert-base-NER', what: 'people, places, organisations (CoNLL-03)' }],
  cls: [{ id: 'Xenova/distilbert-base-uncased-finetuned-sst-2-english', what: 'sentiment, positive / negative' }],
  qa: [{ id: 'Xenova/distilbert-base-cased-distilled-squad', what: 'extractive answers (SQuAD)' }],
  sim: [
    { id: 'Xenova/all-MiniLM-L6-v2', what: 'sentence embeddings' },
    // NomicBERT (rotary positions): 2048 tokens; its card asks for "search_query: " /
    // "search_document: " prefixes, which this tab does not add.
    { id: 'nomic-ai/nomic-embed-text-v1.5', what: 'long-context embeddings (NomicBERT, 2048 tokens)' },
  ],
  // ModernBERT: transformers.js's default fill-mask model, a real masked LM for fluency.
  pt: [{ id: 'onnx-community/ettin-encoder-32m-ONNX', what: 'masked LM for fluency (ModernBERT, Ettin 32M)' }],
};
const HUB_DTYPE = 'q8';
const HUB_WEIGHTS = 'onnx/model_quantized.onnx'; // its file: the size shown before the download
// `?hub=URL` fetches them from another host with the Hub's URL layout (a mirror; the tests' mock).
const hubHost = new URLSearchParams(location.search).get('hub');
if (hubHost) env.remoteHost = hubHost;
const hubName = hubHost ? new URL(hubHost, location.href).host : 'huggingface.co';

export function hubModels(tab, task) {
  const note = el('span', { class: 'hub-note' });
  const buttons = HUB_MODELS[tab].map(({ id, what }) => {
    const b = el('button', { type: 'button', class: 'hub-model', dataset: { id }, title: `${id} from ${hubName} (${HUB_DTYPE}); not tested here` }, `${id} — ${what}`);
    b.addEventListener('click', () => choose(tab, task, id, `${id} (Hugging Face Hub, ${HUB_DTYPE})`, HUB_DTYPE, HUB_WEIGHTS));
    return b;
  });
  const update = () => {
    const offline = navigator.onLine === false;
    for (const b of buttons) b.disabled = offline;
    note.textContent = offline
      ? `Unavailable: this page is offline, and these models download from ${hubName}.`
      : `Downloaded from ${hubName} on first use, then cached; known to fit this task, not tested here.`;
  };
  addEventListener('online', update);
  addEventListener('offline', update);
  update();
  return el('div', { class: 'hub' }, el('span', {}, 'Hub models:'), ...buttons, note);
}
