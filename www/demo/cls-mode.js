// The classification tab's mode and labels, apart from cls.js: the model views (load.js) and "Show
// code" (code.js) read them too, and cls.js imports both.
import { $ } from './dom.js';

export function teaching() {
  return $('#cls-teach-mode').checked;
}

export const clsLabels = () => $('#cls-labels').value.split(',').map((l) => l.trim()).filter(Boolean);

export const METHODS = {
  similarity: 'Zero-shot by sentence similarity: the text and each hypothesis ("This example is {label}.") are embedded and compared. A score is that similarity relative to the other labels (softmax of 20·cosine), not a probability; with Multi-label each label gets sigmoid(20·cosine) on its own, which only ranks: 0.5 means nothing here.',
  nli: 'Zero-shot by entailment (an NLI model, as Hugging Face\'s pipeline): each hypothesis ("This example is {label}.") is judged against the text. Single-label: a probability distribution over the labels. Multi-label: for each label on its own, the probability that the text entails it rather than contradicts it.',
  classifier: 'The model\'s own labels: softmax probabilities of its classification head.',
};
