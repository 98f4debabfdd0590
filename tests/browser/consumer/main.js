// A fresh app that uses the packed webert package as any user would.
import { pipeline } from 'webert';

const out = document.querySelector('#out');
try {
  // The README's example as written.
  const ner = await pipeline('token-classification', '/models/pii/', { dtype: 'q4' }); // the folder's weights: onnx/model_q4.onnx
  const text = new URLSearchParams(location.search).get('text') ?? 'My name is John Smith.';
  const entities = await ner(text, { aggregation_strategy: 'first' });
  out.dataset.result = JSON.stringify({ entities, backend: entities.backend });
} catch (e) {
  out.dataset.error = e.message;
}
out.textContent = out.dataset.result ?? out.dataset.error;
