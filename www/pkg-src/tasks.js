// Generated from src/tasks/registry.rs by `WEBERT_BLESS=1 cargo test --test task_table`;
// do not edit.

/** The tasks `pipeline()` makes, each with the head it needs (null: any encoder). */
export const TASKS = {
  'feature-extraction': { head: null },
  'zero-shot-classification': { head: null },
  'text-classification': { head: 'sequence-classification' },
  'token-classification': { head: 'token-classification' },
  'question-answering': { head: 'question-answering' },
  'fill-mask': { head: 'masked-lm' },
  'text-scoring': { head: 'masked-lm' },
  'next-sentence-prediction': { head: 'next-sentence-prediction' },
};

/** Other names of those tasks. */
export const ALIASES = {
  'embeddings': 'feature-extraction',
  'sentiment-analysis': 'text-classification',
  'ner': 'token-classification',
};

/** Calls that run on another task's pipeline, not pipelines of their own. */
export const CALLS = ['rank'];
