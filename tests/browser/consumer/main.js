// A fresh app that uses the packed webert package as any user would.
import { pipeline } from 'webert';

const out = document.querySelector('#out');
try {
  const ner = await pipeline('token-classification', '/models/pii/');
  const text = new URLSearchParams(location.search).get('text') ?? 'My name is John Smith.';
  const entities = await ner(text, { aggregation_strategy: 'first' });
  out.dataset.result = JSON.stringify({ entities, backend: entities.backend });
} catch (e) {
  out.dataset.error = e.message;
}
out.textContent = out.dataset.result ?? out.dataset.error;
