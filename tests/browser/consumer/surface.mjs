// What a pipeline of the installed package shows, what `webert/testing` adds to it, and the
// members webert.d.ts declares on a pipeline.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pipeline } from 'webert';
import { testHooks } from 'webert/testing';

const [models] = process.argv.slice(2);
const ner = await pipeline('ner', `${models}/pii`);
const own = Object.getOwnPropertyNames(ner);
const hooks = Object.keys(testHooks(ner)).sort();
const trap = await testHooks(ner).trap().then(() => 'no error', (e) => e.message);
const dts = readFileSync(createRequire(import.meta.url).resolve('webert/package.json').replace(/package\.json$/, 'webert.d.ts'), 'utf8');
const base = dts.slice(dts.indexOf('interface PipelineBase'), dts.indexOf('\n}\n', dts.indexOf('interface PipelineBase')));
const declared = [...base.matchAll(/^ {2}(?:readonly )?(\w+)\??[(:]/gm)].map((m) => m[1]);
ner.dispose();
console.log(JSON.stringify({ own, hooks, trap, declared }));
