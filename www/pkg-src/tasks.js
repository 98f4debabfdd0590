// Generated from src/tasks/registry.rs by `WEBERT_BLESS=1 cargo test --test task_table`;
// do not edit.

/**
 * The tasks `pipeline()` makes: the head each needs (null: any encoder), the options of
 * its call, and the engine's defaults of those it has one for.
 */
export const TASKS = {
  'feature-extraction': { head: null, options: ['pooling', 'normalize', 'truncation'], defaults: { pooling: "mean", normalize: false } },
  'zero-shot-classification': { head: null, options: ['hypothesis_template', 'multi_label', 'truncation'], defaults: { hypothesis_template: "This example is {}.", multi_label: false } },
  'text-classification': { head: 'sequence-classification', options: ['top_k', 'function_to_apply', 'truncation'], defaults: {} },
  'token-classification': { head: 'token-classification', options: ['aggregation_strategy', 'stride', 'max_length', 'ignore_labels', 'patterns', 'custom_patterns'], defaults: { aggregation_strategy: "none", stride: 16, ignore_labels: ["O"] } },
  'question-answering': { head: 'question-answering', options: ['top_k', 'max_seq_len', 'doc_stride', 'max_question_len', 'max_answer_len', 'handle_impossible_answer', 'align_to_words'], defaults: { top_k: 1, max_question_len: 64, max_answer_len: 15, handle_impossible_answer: false, align_to_words: true } },
  'fill-mask': { head: 'masked-lm', options: ['top_k', 'truncation'], defaults: { top_k: 5 } },
  'text-scoring': { head: 'masked-lm', options: ['max_length'], defaults: {} },
  'next-sentence-prediction': { head: 'next-sentence-prediction', options: ['truncation'], defaults: {} },
};

/** Other names of those tasks. */
export const ALIASES = {
  'embeddings': 'feature-extraction',
  'sentiment-analysis': 'text-classification',
  'ner': 'token-classification',
};

/** Calls that run on another task's pipeline, not pipelines of their own. */
export const CALLS = ['rank'];
