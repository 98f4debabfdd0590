// Teaching a classifier with the built package in Node (WebAssembly, one thread): hundreds of
// examples embedded with all-MiniLM-L6-v2 and fitted, printing milliseconds for each part.
// It also writes the same examples as JSON lines for the native CLI's figure:
//   node tests/bench/train.mjs [N=400]
//   target/release/webert train-classifier --model models/minilm --data target/train-bench.jsonl --out /tmp/h.safetensors
import { join } from 'node:path';
import { writeFileSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = join(fileURLToPath(import.meta.url), '../../..');
const { pipeline, train } = await import(join(ROOT, 'www/pkg/webert.js'));
const n = Number(process.argv[2] ?? 400);
const golden = JSON.parse(readFileSync(join(ROOT, 'tests/golden/train.json'), 'utf8'));
const base = golden.sets.topics.examples;
const prefixes = ['', 'News:', 'Yesterday', 'I read that', 'Apparently', 'Update:', 'Breaking:', 'In short,', 'Note:', 'Fun fact:'];
const examples = Array.from({ length: n }, (_, i) => {
  const e = base[i % base.length];
  return { text: `${prefixes[Math.floor(i / base.length) % prefixes.length]} ${e.text}`.trim(), label: e.label };
});
writeFileSync(join(ROOT, 'target/train-bench.jsonl'), examples.map((e) => JSON.stringify(e)).join('\n') + '\n');
const encoder = await pipeline('feature-extraction', join(ROOT, 'models/minilm'));
for (const C of [1, 10]) {
  const clf = await train('text-classification', encoder, examples, { C });
  const t = clf.training;
  console.log(JSON.stringify({ examples: n, labels: clf.head.labels.length, C, backend: clf.backend, embed_ms: Math.round(t.embed_ms), fit_ms: Number(t.fit_ms.toFixed(1)), iterations: t.iterations }));
  clf.dispose();
}
encoder.dispose();
