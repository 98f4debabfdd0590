import { pipeline } from '../pkg/webert.js';

/**
 * The pipeline for `want` and how the tab uses it (`mode`): for a model picked in the
 * classification tab, zero-shot by entailment (an NLI classifier), the classifier's own labels,
 * or zero-shot by similarity (a sentence encoder).
 */
export async function open(want, opts) {
  if (want.task === 'pretraining') return { pipe: await pretraining(want.source, opts), mode: 'task' };
  if (want.task !== 'classification') {
    const mode = { 'zero-shot-classification': 'similarity' }[want.task] ?? 'task';
    return { pipe: await pipeline(want.task, want.source, opts), mode };
  }
  const zs = await pipeline('zero-shot-classification', want.source, opts);
  if (zs.info.zero_shot === 'nli') return { pipe: zs, mode: 'nli' };
  if (zs.info.task === 'feature-extraction') return { pipe: zs, mode: 'similarity' };
  if (zs.info.task === 'text-classification') {
    try {
      return { pipe: await pipeline('text-classification', want.source, opts), mode: 'classifier' };
    } finally {
      zs.dispose();
    }
  }
  zs.dispose();
  throw new Error(`this is a ${zs.info.model_type} model with a ${zs.info.task} head; this tab takes a sequence classifier (*ForSequenceClassification), an NLI model or a sentence encoder`);
}

/**
 * Both pre-training pipelines on one checkpoint, each `null` where the model lacks its head
 * (a masked LM has no NSP head, a BertForNextSentencePrediction no MLM head); fails only when
 * neither loads, with the scorer's error.
 */
async function pretraining(source, opts) {
  const [scorer, nsp] = await Promise.allSettled([
    pipeline('text-scoring', source, opts),
    pipeline('next-sentence-prediction', source, opts),
  ]);
  if (scorer.status === 'rejected' && nsp.status === 'rejected') throw scorer.reason;
  const pipes = {
    scorer: scorer.value ?? null,
    nsp: nsp.value ?? null,
    nspError: nsp.reason?.message,
    scorerError: scorer.reason?.message,
  };
  const main = pipes.scorer ?? pipes.nsp;
  return Object.assign(pipes, {
    backend: main.backend, adapter: main.adapter, info: main.info, gpuFailure: main.gpuFailure,
    dispose() {
      pipes.scorer?.dispose();
      pipes.nsp?.dispose();
    },
  });
}
