// The package's tasks are the engine's: tasks.js (written from src/tasks/registry.rs and
// checked against it by tests/task_table.rs) against the TypeScript declarations and the
// package's own functions. Needs no build: it reads www/pkg-src.
//   node --test tests/browser/tasks.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './golden.mjs';

const SRC = join(ROOT, 'www/pkg-src');
const { TASKS, ALIASES, CALLS } = await import(join(SRC, 'tasks.js'));

test('the .d.ts names every task and alias of the table, and nothing else', () => {
  const dts = readFileSync(join(SRC, 'webert.d.ts'), 'utf8');
  const block = dts.match(/export interface PipelineByTask \{([^}]*)\}/);
  assert.ok(block, 'PipelineByTask not found in webert.d.ts');
  const declared = [...block[1].matchAll(/^\s*'?([\w-]+)'?\s*:/gm)].map((m) => m[1]).sort();
  const table = [...Object.keys(TASKS), ...Object.keys(ALIASES)].sort();
  assert.deepEqual(declared, table);
  for (const [alias, task] of Object.entries(ALIASES)) {
    const type = (name) => block[1].match(new RegExp(`^\\s*'?${name}'?\\s*:\\s*(\\w+)`, 'm'))[1];
    assert.equal(type(alias), type(task), `${alias} is declared as another pipeline than ${task}`);
  }
  assert.ok(CALLS.every((c) => !(c in TASKS)));
});

test('the package makes a pipeline of every task of the table and refuses other names', async () => {
  // Importing it checks that its task functions are the table's (it throws otherwise).
  const { pipeline } = await import(join(SRC, 'webert.js'));
  await assert.rejects(pipeline('summarization', {}), (e) => {
    for (const t of [...Object.keys(TASKS), ...Object.keys(ALIASES)]) assert.ok(e.message.includes(t), `${t} not in: ${e.message}`);
    return /unknown task "summarization"/.test(e.message);
  });
});

test('the .d.ts declares every option of each task the table lists', () => {
  const dts = readFileSync(join(SRC, 'webert.d.ts'), 'utf8');
  const INTERFACES = {
    'feature-extraction': 'FeatureExtractionOptions',
    'zero-shot-classification': 'ZeroShotOptions',
    'text-classification': 'TextClassificationOptions',
    'token-classification': 'TokenClassificationOptions',
    'question-answering': 'QuestionAnsweringOptions',
    'fill-mask': 'FillMaskOptions',
    'text-scoring': 'TextScoringOptions',
    'next-sentence-prediction': 'NextSentenceOptions',
  };
  assert.deepEqual(Object.keys(INTERFACES).sort(), Object.keys(TASKS).sort());
  for (const [task, name] of Object.entries(INTERFACES)) {
    const body = dts.match(new RegExp(`export interface ${name}\\b[^{]*\\{([\\s\\S]*?)\\n\\}`));
    assert.ok(body, `${name} not found in webert.d.ts`);
    const declared = [...body[1].matchAll(/^\s*(\w+)\??:/gm)].map((m) => m[1]);
    for (const option of TASKS[task].options) assert.ok(declared.includes(option), `${name} lacks ${task}'s option ${option}`);
    for (const option of Object.keys(TASKS[task].defaults)) assert.ok(TASKS[task].options.includes(option));
  }
});
