// The packed package in Node: resolved by name through its exports, a model folder path.
import { pipeline } from 'webert';

const [models, text] = process.argv.slice(2);
const ner = await pipeline('ner', `${models}/pii`);
const entities = await ner(text, { aggregation_strategy: 'first' });
console.log(JSON.stringify({ entities, backend: entities.backend }));
