// Compiled with `tsc --noEmit` against the packed package's webert.d.ts.
import { Tensor, cos_sim, pipeline, redact, type Answer, type Entity, type LabelScore, type Prediction, type Ranked, type TextScore, type ZeroShotOutput } from 'webert';
import { testHooks } from 'webert/testing';

const ner = await pipeline('token-classification', '/models/pii/', { onProgress: (p) => p.stage, device: 'auto' });
const one = await ner('text', { aggregation_strategy: 'first' });
const first: Entity | undefined = one[0];
const many = await ner(['a', 'b']);
const nested: Entity[][] = many;
const withPatterns = await ner('text', { patterns: true, custom_patterns: [{ label: 'ID', regex: 'ID-\\d+' }] });
const source: 'model' | 'pattern' | undefined = withPatterns[0]?.source;
await redact.ready();
const redacted: string = redact('text', withPatterns, { style: 'pseudonym' });
redact('text', [{ label: 'X', start: 0, end: 1 }]);
// @ts-expect-error: no such style
redact('text', [], { style: 'blur' });
const backend: string = one.backend;
const ms: number = many.ms;
const zs = await pipeline('zero-shot-classification', '/models/minilm/');
const zsOut = await zs('text', ['a', 'b'], { multi_label: true });
const labels: ZeroShotOutput = zsOut;
const method: 'nli' | 'similarity' = zsOut.method;
const embed = await pipeline('feature-extraction', new URL('https://example.org/m/'));
const vec: Tensor = await embed('x', { pooling: 'mean', normalize: true });
const dims: number[] = vec.dims;
const data: Float32Array = vec[0].data;
const states: Tensor = await embed(['x', 'y']);
const list: any[] = states.tolist();
const similarity: number = cos_sim(vec[0].data, states[0][0].data);
const bits: Int8Array = (await embed('x', { pooling: 'mean', quantize: true })).data;
const ubits: Uint8Array = (await embed('x', { pooling: 'mean', quantize: true, precision: 'ubinary' })).data;
// @ts-expect-error: no such pooling
await embed('x', { pooling: 'median' });
const ranked: Ranked[] = await embed.rank('q', ['d']);
const qa = await pipeline('question-answering', { 'config.json': new ArrayBuffer(0) });
const answer = await qa('q?', 'context');
const start: number | undefined = answer?.start;
const three: Answer[] = await qa({ question: 'q?', context: 'c' }, { top_k: 3 });
const batch = await qa(['q?', 'r?'], 'one context');
const nsp = await pipeline('next-sentence-prediction', '/models/bert/');
const isNext: LabelScore[] = await nsp({ text: 'A.', text_pair: 'B.' });
const pairs: LabelScore[][] = await nsp([{ text: 'A.', text_pair: 'B.' }]);
const fill = await pipeline('fill-mask', '/models/splade-tiny/');
const masked: Prediction[] | Prediction[][] = await fill('The [MASK].');
const pll: number = (await fill.score('text', { max_length: 64 })).pseudo_log_likelihood;
const scored: TextScore[] = await (await pipeline('text-scoring', '/models/splade-tiny/'))(['a', 'b']);
const profile: Record<string, number> | null = await ner.profile('text');
// @ts-expect-error: a pipeline has no test hooks; webert/testing adds them
await ner.debugTrap();
const threads: number = await testHooks(embed).threads(1);
const lane: { answered: number } | null = testHooks(ner).laneStats();
await testHooks(qa).trap();
export { isNext, pairs, pll, scored, method, dims, data, list, similarity, three, batch, masked };
export { first, nested, source, redacted, many, backend, ms, labels, vec, states, ranked, start, profile, threads, lane };
