/**
 * A Hugging Face model folder: its URL, picked files, or file name → bytes (a directory path in
 * Node); or a model id such as `'Xenova/bert-base-NER'` (or its `https://huggingface.co/…` URL),
 * fetched from `env.remoteHost`. A folder URL ends with `/` or starts with `/`, `./`, `../` or a
 * scheme; in Node a directory of that name wins over the id.
 */
export type ModelSource =
  | string
  | URL
  | FileList
  | File[]
  | Record<string, ArrayBuffer | ArrayBufferView | Blob>
  | { name: string; data: ArrayBuffer | ArrayBufferView | Blob }[];

export interface LoadProgress {
  /**
   * `compile`: starting the WebAssembly module (`file`: the .wasm; it runs while the model's
   * files download, so this event may come before or among the `download` ones), then building
   * the model (`bytes` > 0, after the downloads); `upload`: setting up
   * WebGPU and its weights, and under `device: 'auto'` timing WebGPU against the CPU.
   */
  stage: 'download' | 'compile' | 'upload' | 'ready' | 'warning';
  /** `warning`: what went wrong without stopping the load (the Cache API refused a file: quota exceeded). */
  message?: string;
  /** The file being read, when there is one. */
  file?: string;
  /** Bytes read so far over all files, and their total as far as known. */
  bytes: number;
  total: number;
  /** `download`: bytes of `file` read so far, and its size as far as known. */
  fileBytes?: number;
  fileTotal?: number;
  /** The file came from the Cache API, not the network. */
  cached?: boolean;
}

/** transformers.js's load events, which `progress_callback` gets besides webert's own. */
export type TransformersProgress =
  | { status: 'initiate' | 'download' | 'done'; name: string; file: string }
  | { status: 'progress'; name: string; file: string; progress: number; loaded: number; total: number }
  | { status: 'progress_total'; name: string; progress: number; loaded: number; total: number; files: Record<string, { loaded: number; total: number }> }
  | { status: 'ready'; task: string; model: string };

export interface PipelineOptions {
  /**
   * `'auto'` (default): WebGPU on a hardware adapter if it is faster than WebAssembly SIMD (one
   * forward of up to 128 tokens timed on each at load; see `ModelInfo.probe`), else WebAssembly
   * SIMD; a later GPU failure (device lost) switches to the CPU for good, and the call still
   * answers. `'webgpu'` (or `'gpu'`): any adapter, failures are errors. `'cpu'` (or `'wasm'`): WebAssembly SIMD only.
   */
  device?: 'auto' | 'cpu' | 'webgpu' | 'wasm' | 'gpu';
  /**
   * How the CPU path computes with q4 weights (ONNX `MatMulNBits`). `'int'` (default): integer
   * dot products on the weights' 4-bit codes with activations quantized per row and block of
   * 32, int8 where the engine has relaxed SIMD (faster; scores move by a few hundredths,
   * labels and spans equal on the goldens), int16 elsewhere (scores within a few ten-thousandths;
   * figures in the repository's docs/quantization.md). `'f32'`: dequantized f32 weights, the
   * math of ONNX Runtime. q8/int8/uint8 weights (ONNX `MatMulInteger`): `'int'` computes them
   * as ONNX Runtime does (activations quantized per sequence, integer dot products), on the
   * CPU and on WebGPU alike; `'f32'` with the dequantized weights on both. WebGPU computes q4
   * in f32 (or f16) either way.
   */
  quantized?: 'int' | 'f32';
  /**
   * Bytes the model's f32 weights and one batch's activations may take in the wasm memory
   * (default 2 GiB). A model that declares more is refused with a clear error before anything
   * is allocated; a call that would need more fails alone and the model stays usable.
   */
  memoryBudget?: number;
  /**
   * How WebGPU keeps q4/q8 weights: `'packed'` (their 4- or 8-bit codes in GPU memory, unpacked
   * inside the matrix products: 4–8x less memory) or `'dequantized'` (f32/f16 at upload).
   * Default: packed on hardware adapters, dequantized on software ones (SwiftShader), except
   * q8 weights computed as ONNX Runtime does (`quantized: 'int'`), which stay packed everywhere;
   * `'dequantized'` computes those in f32 too.
   */
  gpuWeights?: 'packed' | 'dequantized';
  /**
   * How WebGPU tiles its matrix products: `'timed'` (the first call of each shape times every
   * candidate tiling on the device, about a few hundred ms, and keeps the fastest; needs the
   * adapter's `timestamp-query`) or `'rule'`. Default: timed on hardware adapters that offer
   * timestamps, by rule elsewhere. Timed tilings are kept in the Cache API (unless `cache` is
   * false), so later page loads and other models on the same adapter restore them instead of
   * timing again (`ModelInfo.savedGpuTilings`); `clearCache()` with no model clears them.
   */
  gpuTilings?: 'timed' | 'rule';
  /** Let `'auto'` use a fallback adapter (CPU-emulated, e.g. SwiftShader), which it otherwise skips as slower than the CPU path. */
  allowFallbackAdapter?: boolean;
  /** `false`: `'auto'` keeps WebGPU whenever it sets up, without timing it against the CPU (default true). */
  probe?: boolean;
  /** Run in a module Web Worker (default in browsers) or in the calling thread (Node: always). */
  worker?: boolean;
  /**
   * CPU threads (the engine's own included). Default: half the cores, at most 4 (ONNX Runtime
   * Web's default). More than 1 needs a cross-origin isolated page (`Cross-Origin-Opener-Policy:
   * same-origin` and `Cross-Origin-Embedder-Policy: require-corp`) and relaxed SIMD: the threads
   * build then runs, its helpers in Web Workers sharing its memory; elsewhere 1 thread
   * (`ModelInfo.threads` says). Results do not depend on the thread count. The first module
   * started in a context fixes the build: later pipelines there can use more threads only if
   * it is the threads build.
   */
  threads?: number;
  onProgress?: (p: LoadProgress) => void;
  /** transformers.js's name: its events (`status`: initiate, download, progress, progress_total, done, ready) and webert's (`stage`). Ignored when `onProgress` is given. */
  progress_callback?: (p: TransformersProgress | LoadProgress) => void;
  /** Cancels loading; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Expected sha256 (hex) per file path, e.g. `{ 'onnx/model_q4.onnx': '9f27…' }`; checked before use. */
  sha256?: Record<string, string>;
  /**
   * Which weights, by transformers.js's names: `fp32` (safetensors, else `onnx/model.onnx`),
   * `fp16` (`onnx/model_fp16.onnx`), `q8` (`onnx/model_quantized.onnx`), `int8`, `uint8`, `q4`,
   * `q4f16`, `bnb4` (`onnx/model_{dtype}.onnx`). Only that file is downloaded; a dtype the model
   * lacks is an error naming those it has. Default (or `'auto'`): the most accurate weights present.
   */
  dtype?: 'auto' | 'fp32' | 'fp16' | 'q8' | 'int8' | 'uint8' | 'q4' | 'q4f16' | 'bnb4';
  /** transformers.js's: ids are looked up locally only (`env.localModelPath`), never fetched. */
  local_files_only?: boolean;
  /** transformers.js's: the weights are `{subfolder}/{model_file_name}{dtype suffix}.onnx` (default `onnx/model…`). */
  model_file_name?: string;
  subfolder?: string;
  /** Branch, tag or commit of a model id (default `'main'`). */
  revision?: string;
  /** Weight file to use instead of the preferred one, e.g. `'onnx/model_q4.onnx'`. */
  weights?: string;
  /**
   * Keep downloaded files in the Cache API and read them from there (default true). An entry that
   * is not whole (cut off) is fetched again; when the browser refuses to store a file (quota
   * exceeded) the model loads uncached, with a `warning` progress event and `ModelInfo.cacheError`.
   */
  cache?: boolean;
  /**
   * With `cache`, keep a packed-model image beside the files (default true): after a load that
   * runs on the CPU, the engine's weights as imported and packed for this machine's kernel go to
   * the Cache API (`webert-packed-v1`), keyed by the SHA-256 of every file and the `quantized`
   * mode; a later load of the same files reads it instead of importing and packing the
   * weights, without reading the weight files. A changed file misses; an image of another
   * package build or kernel is refused by the engine, dropped and written anew.
   * `ModelInfo.packedImage` says what a load did. Not for WebGPU loads (the image holds no GPU
   * weights).
   */
  packedCache?: boolean;
  /** Milliseconds without a byte after which a download request is given up and tried again (default 30000; 0: none). */
  downloadTimeout?: number;
  /**
   * `text-classification` only: classify with a head taught by `train()` (its `exportHead()`
   * bytes, or a URL of them; a path in Node) on this model's sentence embeddings, instead of the
   * model's own head. The model must be the encoder the head was trained on, else the promise
   * rejects.
   */
  head?: HeadSource;
}

/** A classifier head file (safetensors): its URL (a path in Node), or its bytes. */
export type HeadSource = string | URL | ArrayBuffer | ArrayBufferView | Blob;

/** Attached (non-enumerable) to every result. */
export interface ResultMeta {
  /** What ran this call: `cpu-relaxed-simd` or `cpu-simd128`, or `gpu <adapter> (BrowserWebGpu)`. */
  readonly backend: string;
  /** Milliseconds the engine computed. */
  readonly ms: number;
  /** Milliseconds from the call to the answer, queueing and messaging included. */
  readonly wall_ms: number;
}
export type WithMeta<T> = T & ResultMeta;

export interface ModelInfo {
  /** What the first call will run on. */
  backend: string;
  /** Why the GPU was given up for the CPU, if it was: a failure, or slower than the CPU at load. */
  gpu_failure: string | null;
  /** CPU threads in use (1 on WebGPU, or where the page is not cross-origin isolated). */
  threads: number;
  /** In a browser, where more than one thread was asked for and one runs: why (not cross-origin isolated, no SharedArrayBuffer as in WebKit, no relaxed SIMD). */
  threadsNote?: string;
  /** The CPU's integer tile for q4 (`MatMulNBits`) weights, e.g. `relaxed-simd int8` or `simd128 int16`; null when the CPU computes in f32 (`quantized: 'f32'`, or no q4 weights). */
  int_kernel: string | null;
  /**
   * Under `device: 'auto'` with a WebGPU adapter: milliseconds of one forward of `tokens` tokens
   * on each; the faster was kept, unless the GPU's hidden states disagreed with the CPU's
   * (`agreement`, their cosine with the CPU's mean token taken out, below 0.9: wrong answers).
   */
  probe: { adapter: string; tokens: number; gpu_ms: number; cpu_ms: number; agreement: number } | null;
  /**
   * The WebAssembly build running the CPU path, picked by probing this engine: `relaxed-simd
   * threads`, `relaxed-simd`, or `simd128` (engines without every relaxed-SIMD instruction).
   */
  wasmBuild: 'relaxed-simd threads' | 'relaxed-simd' | 'simd128';
  /** Why a faster build was not used (missing relaxed-SIMD opcodes, a build that failed to start); absent when none was passed over. */
  wasmBuildNote?: string;
  /** The model folder's files that were read (config, tokenizer, the weights of the dtype chosen), e.g. `['config.json', 'onnx/model_quantized.onnx', 'tokenizer.json']`. */
  files: string[];
  /**
   * Why the Cache API did not keep this model's files (e.g. `QuotaExceededError: …`, or `not
   * kept: …` where the page does not see what the model's worker stored); absent when it did or
   * was not used. Either way a `warning` progress event says so.
   */
  cacheError?: string;
  /**
   * The packed-model image (`packedCache`): `read` (this load came from one) or `refused (…)`
   * (one was there but the engine would not read it: the files were loaded and a new image is
   * written); absent otherwise. An image the browser does not store (quota) is a console warning.
   */
  packedImage?: string;
  /**
   * Where the load's time went, in milliseconds: `compile_ms` starting the WebAssembly module
   * (0 when it already ran) and `files_ms` downloading or reading the cache, which run at once,
   * `start_and_files_ms` until both were done, `copy_ms` handing the
   * bytes to it, `build_ms` parsing, packing the weights and (WebGPU) setting up and timing the
   * GPU, `warm_ms` warming helper threads and saving GPU tilings; `total_ms` their sum in the
   * model's thread, `wall_ms` the whole load as the page saw it and `worker_ms` what that adds
   * (starting the worker, messages), of which `worker_start_ms` passed before the worker began
   * the load. `build` splits `build_ms`: `parse_ms` reading the files
   * into weights, `plan_ms` the forward pass's plan, `gpu_ms` setting up WebGPU, `pack_ms`
   * laying the weights out for the CPU's kernels, `probe_ms` timing both under `device: 'auto'`,
   * `image_ms` reading a packed-model image in place of parse, plan and pack.
   */
  loadPhases: {
    compile_ms: number; files_ms: number; start_and_files_ms: number; copy_ms: number; build_ms: number; warm_ms: number; total_ms: number; wall_ms: number; worker_ms: number; worker_start_ms: number;
    build: { parse_ms: number; plan_ms: number; gpu_ms: number; pack_ms: number; probe_ms: number; image_ms: number };
  };
  /** In a worker: whether this pipeline took the worker a disposed one left (`env.spareWorkerMs`). */
  workerReused?: boolean;
  /** The WebGPU adapter's vendor/architecture/description, when a GPU was set up. */
  adapter?: string | null;
  /** With WebGPU: how many GEMM tilings timed by earlier loads were read from the Cache API (each used where still valid for this adapter). */
  savedGpuTilings?: number;
  /** The family as config.json names it, e.g. `bert`, `roberta`, `deberta-v2`, `modernbert`, `nomic_bert`, `gte`. */
  model_type: string;
  /** The task the checkpoint's head does (`feature-extraction` for a bare encoder). */
  task: string;
  labels: string[];
  /**
   * How `zero-shot-classification` works on this model: `'nli'` for a sequence classifier whose
   * labels name entailment (an MNLI/XNLI checkpoint, as Hugging Face's pipeline), else
   * `'similarity'` (sentence-embedding similarity of the text and each hypothesis).
   */
  zero_shot: 'nli' | 'similarity';
  max_length: number;
  hidden_size: number;
  num_layers: number;
  mask_token: string | null;
}

interface PipelineBase {
  readonly task: string;
  /** The device asked for. */
  readonly device: 'auto' | 'cpu' | 'webgpu';
  /** What ran the latest call (before any: what will run first). */
  readonly backend: string;
  /** Why the GPU was given up for the CPU, if it was: a failure, or slower than the CPU at load. */
  readonly gpuFailure: string | null;
  /** The WebGPU adapter in use when a GPU was set up, else null. */
  readonly adapter: string | null;
  readonly info: ModelInfo;
  /** Stops the worker (when no other pipeline shares the model) and frees the model. */
  dispose(): void;
  /**
   * Where one forward over `text` spends its time, for profiling: milliseconds per GPU kernel
   * on WebGPU (null where the adapter has no timestamp queries), or per kind of op on the CPU;
   * on more than one thread, the `pool: …` entries are counts of the thread pool's tasks, loops
   * and spins, not milliseconds. Runs after the calls queued before it.
   */
  profile(text: string): Promise<Record<string, number> | null>;
  /**
   * How near this machine's limits CPU forwards over `text` run (null on WebGPU): the median of
   * `runs` forwards (default 10, after one untimed) beside the single-thread read bandwidth
   * (summing 64 MiB, which stays in the module's memory) and the tile's multiply-add peak.
   * Runs after the calls queued before it.
   */
  roofline(text: string, options?: { runs?: number }): Promise<Roofline | null>;
}

/** One forward's figures beside this machine's limits (`pipe.roofline`). */
export interface Roofline {
  /** Tokens of the forward. */
  tokens: number;
  forward_ms: number;
  /** Bytes of packed linear weights the encoder reads, each once. */
  weight_bytes: number;
  weight_gb_per_s: number;
  /** This machine's single-thread read bandwidth. */
  read_gb_per_s: number;
  of_read_bandwidth: number;
  /** Multiply-adds per second (×1e9) of the tile that multiplies the weights; null for q4 tiles. */
  peak_gmac_per_s: number | null;
  /** The longer of streaming the weights at read bandwidth and the multiply-adds at peak. */
  floor_ms: number | null;
  of_floor: number | null;
}

/** `true` cuts at the model's limit, a number at that many tokens; otherwise long inputs are an error. */
export type Truncation = boolean | number;

export interface LabelScore {
  label: string;
  score: number;
}

/** Progress of a watched call: windows of the input(s) run so far, out of `total`. */
export interface CallProgress {
  stage: 'windows';
  done: number;
  total: number;
}
/**
 * Any call may be watched: it then reports its windows (long texts are cut into overlapping
 * windows of the model's length) and stops before the next window when `signal` aborts (the
 * promise rejects with `signal.reason` at once). A watched call skips the express lane and runs
 * one window per batch (CPU and WebGPU).
 */
export interface CallControl {
  signal?: AbortSignal;
  onProgress?: (p: CallProgress) => void;
}

export interface TextClassificationOptions extends CallControl {
  /** Labels to return, best first (default 1); `null` returns all. */
  top_k?: number | null;
  /** Default: sigmoid for multi-label or single-logit heads, softmax otherwise. */
  function_to_apply?: 'softmax' | 'sigmoid' | 'none';
  truncation?: Truncation;
}
export type TextInput = string | { text: string; text_pair?: string | null };
/** A batch with `top_k` 1 (the default) gives each text's best label in one list, as transformers.js; with more, a list per text. */
export interface TextClassificationPipeline extends PipelineBase {
  (input: TextInput, options?: TextClassificationOptions): Promise<WithMeta<LabelScore[]>>;
  (input: TextInput[], options?: TextClassificationOptions & { top_k?: 1 }): Promise<WithMeta<LabelScore[]>>;
  (input: TextInput[], options: TextClassificationOptions & { top_k: number | null }): Promise<WithMeta<LabelScore[][]>>;
}

export interface TokenClassificationOptions extends CallControl {
  /** As the HF pipeline; default `'none'` (one entry per token). */
  aggregation_strategy?: 'none' | 'simple' | 'first' | 'average' | 'max';
  /** Tokens shared by consecutive windows of a text longer than the model takes (default 16). */
  stride?: number;
  /** Window length in tokens (default: the model's maximum). */
  max_length?: number;
  /** Default `['O']`. */
  ignore_labels?: string[];
  /**
   * The pattern layer (default off): e-mail, phone (international and national formats), IBAN
   * (country length and mod 97), payment card (issuer prefix, length, Luhn), IPv4/IPv6 and US SSN
   * found by validated rules beside the model. A pattern match wins over a model entity it
   * overlaps (the model entity keeps its parts outside the match); every entity then carries
   * `source`. Pattern entities have `entity_group` (the type), `score` 1.
   */
  patterns?: boolean;
  /** Your own patterns (Rust `regex` syntax): every match is an entity of type `label`. */
  custom_patterns?: CustomPattern[];
}
export interface CustomPattern {
  label: string;
  regex: string;
}
export interface Entity {
  /** With `aggregation_strategy: 'none'`. */
  entity?: string;
  /** With any other strategy. */
  entity_group?: string;
  score: number;
  /** Token index (with `'none'`). */
  index?: number;
  word: string;
  /** UTF-16 offsets: `text.slice(start, end)` is the entity. */
  start: number;
  end: number;
  /** Which layer found it; present when `patterns` or `custom_patterns` was given. */
  source?: 'model' | 'pattern';
}
export interface TokenClassificationPipeline extends PipelineBase {
  (text: string, options?: TokenClassificationOptions): Promise<WithMeta<Entity[]>>;
  (texts: string[], options?: TokenClassificationOptions): Promise<WithMeta<Entity[][]>>;
}

export interface QuestionAnsweringOptions extends CallControl {
  top_k?: number;
  /** Window length (default min(model max, 384)). */
  max_seq_len?: number;
  /** Default min(max_seq_len / 2, 128). */
  doc_stride?: number;
  max_question_len?: number;
  /** Default 15 tokens. */
  max_answer_len?: number;
  handle_impossible_answer?: boolean;
  align_to_words?: boolean;
}
export interface Answer {
  score: number;
  /** UTF-16 offsets into the context. */
  start: number;
  end: number;
  answer: string;
}
export interface QuestionAnswer {
  question: string;
  context: string;
}
/** With `top_k` 1 (the default) the best answer (null when none), with more a list best first; arrays give one such result per question, as transformers.js. */
export interface QuestionAnsweringPipeline extends PipelineBase {
  (question: string, context: string, options?: QuestionAnsweringOptions & { top_k?: 1 }): Promise<WithMeta<Answer> | null>;
  (question: string, context: string, options: QuestionAnsweringOptions & { top_k: number }): Promise<WithMeta<Answer[]>>;
  (input: QuestionAnswer, options?: QuestionAnsweringOptions & { top_k?: 1 }): Promise<WithMeta<Answer> | null>;
  (input: QuestionAnswer, options: QuestionAnsweringOptions & { top_k: number }): Promise<WithMeta<Answer[]>>;
  /** One context for every question, or one per question. */
  (questions: string[], contexts: string | string[], options?: QuestionAnsweringOptions): Promise<(Answer | Answer[] | null)[]>;
  (inputs: QuestionAnswer[], options?: QuestionAnsweringOptions): Promise<(Answer | Answer[] | null)[]>;
}

export interface FeatureExtractionOptions extends CallControl {
  /** Default `'none'` (every token's hidden state), as transformers.js; `'first_token'` is `'cls'`,
   * `'eos'` is `'last_token'` (each text's last real token, padding skipped). */
  pooling?: 'none' | 'mean' | 'cls' | 'first_token' | 'max' | 'last_token' | 'eos';
  /** L2-normalise each vector (default false). */
  normalize?: boolean;
  /** Pack each pooled vector into bits (transformers.js's binary quantization; default false). */
  quantize?: boolean;
  /** `'binary'` (int8, the default) or `'ubinary'` (uint8). */
  precision?: 'binary' | 'ubinary';
  truncation?: Truncation;
}
export interface Ranked {
  corpus_id: number;
  /** Cosine similarity to the query. */
  score: number;
  text: string;
}
/**
 * A result tensor as transformers.js's: row-major `data`, `dims`, `tolist()`; `tensor[i]` is
 * the i-th sub-tensor along the first dimension.
 */
/** The typed array of each Tensor type. */
export interface TensorData {
  float32: Float32Array;
  int8: Int8Array;
  uint8: Uint8Array;
}
export declare class Tensor<T extends keyof TensorData = 'float32'> {
  constructor(type: T, data: TensorData[T], dims: number[]);
  /** `'float32'`; `'int8'` / `'uint8'` for bit-packed vectors (`quantize: true`). */
  readonly type: T;
  readonly data: TensorData[T];
  readonly dims: number[];
  readonly size: number;
  at(i: number): Tensor<T>;
  tolist(): any[];
  readonly [index: number]: Tensor<T>;
}
/** Pooled vectors packed into bits, as transformers.js's `quantize_embeddings`. */
export function quantize_embeddings(tensor: Tensor, precision?: 'binary'): Tensor<'int8'>;
export function quantize_embeddings(tensor: Tensor, precision: 'ubinary'): Tensor<'uint8'>;
/** Cosine similarity of two vectors, as transformers.js's `cos_sim`. */
export function cos_sim(a: ArrayLike<number>, b: ArrayLike<number>): number;
/**
 * A Tensor with a row per text (a string is a batch of one): `[texts, hidden]` when pooled,
 * `[texts, tokens, hidden]` with `pooling: 'none'` (the default), rows past a shorter text's
 * last token 0.
 */
export interface FeatureExtractionPipeline extends PipelineBase {
  (texts: string | string[], options: FeatureExtractionOptions & { quantize: true; precision: 'ubinary' }): Promise<WithMeta<Tensor<'uint8'>>>;
  (texts: string | string[], options: FeatureExtractionOptions & { quantize: true }): Promise<WithMeta<Tensor<'int8'>>>;
  (texts: string | string[], options?: FeatureExtractionOptions & { quantize?: false }): Promise<WithMeta<Tensor>>;
  /** Documents by cosine similarity to the query, best first. */
  rank(query: string, documents: string[], options?: CallControl & { pooling?: 'mean' | 'cls' | 'max'; truncation?: Truncation }): Promise<WithMeta<Ranked[]>>;
}

export interface FillMaskOptions extends CallControl {
  /** Default 5. */
  top_k?: number;
  truncation?: Truncation;
}
export interface Prediction {
  score: number;
  token: number;
  token_str: string;
  sequence: string;
}
export interface FillMaskPipeline extends PipelineBase {
  /** One mask: its predictions, best first (as transformers.js); several masks: a list per mask, in text order. */
  (text: string, options?: FillMaskOptions): Promise<WithMeta<Prediction[] | Prediction[][]>>;
  (texts: string[], options?: FillMaskOptions): Promise<WithMeta<(Prediction[] | Prediction[][])[]>>;
  /** The pseudo-log-likelihood of each text (the `text-scoring` task on this model). */
  score(text: string, options?: TextScoringOptions): Promise<WithMeta<TextScore>>;
  score(texts: string[], options?: TextScoringOptions): Promise<WithMeta<TextScore[]>>;
}

export interface TextScoringOptions {
  /** Window length in tokens for long texts (default: the model's maximum). */
  max_length?: number;
}
export interface TokenScore {
  /** The vocabulary token, e.g. `##ing`. */
  token: string;
  /** Natural log of its probability where it is masked. */
  log_prob: number;
  /** UTF-16 offsets: `text.slice(start, end)` is the token's text. */
  start: number;
  end: number;
}
export interface TextScore {
  /** Sum of `tokens[].log_prob` (higher is more fluent; compare texts of similar length, or divide by `tokens.length`). */
  pseudo_log_likelihood: number;
  /** Every non-special token, each scored once: masked, with a window of up to `max_length` tokens centred on it. */
  tokens: TokenScore[];
}
/**
 * Masked-LM scoring (Salazar et al. 2020): each token masked in turn, its log-probability
 * summed. Runs on any masked-LM model (`*ForMaskedLM`, `BertForPreTraining`).
 */
export interface TextScoringPipeline extends PipelineBase {
  (text: string, options?: TextScoringOptions): Promise<WithMeta<TextScore>>;
  (texts: string[], options?: TextScoringOptions): Promise<WithMeta<TextScore[]>>;
}

export interface SentencePair {
  text: string;
  /** The sentence that may follow `text`. */
  text_pair: string;
}
export interface NextSentenceOptions {
  truncation?: Truncation;
}
/**
 * BERT's next-sentence prediction (`BertForNextSentencePrediction`, `BertForPreTraining`):
 * `[{ label: 'IsNext' | 'NotNext', score }]`, the likelier first (softmax over the two logits).
 */
export interface NextSentencePipeline extends PipelineBase {
  (input: SentencePair, options?: NextSentenceOptions): Promise<WithMeta<LabelScore[]>>;
  (inputs: SentencePair[], options?: NextSentenceOptions): Promise<WithMeta<LabelScore[][]>>;
}

export interface ZeroShotOptions extends CallControl {
  /** Default `'This example is {}.'`. */
  hypothesis_template?: string;
  /** Labels judged independently (several may hold) instead of one distribution over them. */
  multi_label?: boolean;
  /** `true` cuts each text at the model's limit, a number at that many tokens (only the text, not the label's hypothesis). */
  truncation?: Truncation;
}
/**
 * Labels best first, with `method` (`ModelInfo.zero_shot`) saying how they were scored:
 * - `'nli'` (an NLI classifier, as Hugging Face's pipeline; every (text, label) pair in one
 *   batch): softmax of the entailment logits across the labels; with `multi_label` (or one
 *   label), per label the probability of entailment against contradiction.
 * - `'similarity'` (any other encoder): softmax(20·cos) of sentence embeddings across labels, or
 *   sigmoid(20·cos) per label with `multi_label`: relative similarities, not probabilities (no
 *   0.5 threshold applies).
 */
export type ZeroShotResult<T> = WithMeta<T> & { readonly method: 'nli' | 'similarity' };
/** A text and its labels with their scores, best first (transformers.js's and Hugging Face's shape). */
export interface ZeroShotOutput {
  sequence: string;
  labels: string[];
  scores: number[];
}
export interface ZeroShotPipeline extends PipelineBase {
  (text: string, labels: string[] | string, options?: ZeroShotOptions): Promise<ZeroShotResult<ZeroShotOutput>>;
  (texts: string[], labels: string[] | string, options?: ZeroShotOptions): Promise<ZeroShotResult<ZeroShotOutput[]>>;
  (text: string, options: ZeroShotOptions & { candidate_labels: string[] | string }): Promise<ZeroShotResult<ZeroShotOutput>>;
  (texts: string[], options: ZeroShotOptions & { candidate_labels: string[] | string }): Promise<ZeroShotResult<ZeroShotOutput[]>>;
}

export interface TrainingExample {
  text: string;
  label: string;
}

/** Progress of `train()`: the model's loading stages, then the examples embedded so far. */
export type TrainProgress = LoadProgress | { stage: 'embed'; done: number; total: number };

export interface TrainOptions extends Omit<PipelineOptions, 'head' | 'onProgress' | 'progress_callback'> {
  /** Inverse regularisation strength, as scikit-learn's `LogisticRegression(C)` (default 1). */
  C?: number;
  /** Cut examples longer than the model takes (default true: at the model's limit). */
  truncation?: Truncation;
  onProgress?: (p: TrainProgress) => void;
  progress_callback?: (p: TrainProgress) => void;
}

/** What a classifier head file says about itself. */
export interface HeadInfo {
  /** Sorted (by code point, as scikit-learn's `classes_`). */
  labels: string[];
  C: number;
  /** The encoder whose embeddings it was trained on. */
  encoder: { model_type: string; hidden_size: number; config_hash: string };
  examples: number;
  /** L-BFGS iterations, and whether the fit reached its tolerance (it does unless something is badly off). */
  iterations: number;
  converged: boolean;
}

export interface TrainedClassifierPipeline extends TextClassificationPipeline {
  readonly head: HeadInfo;
  /** The head as a safetensors file (a few kB): save it, and load it with `pipeline(..., { head })`. */
  exportHead(): Uint8Array;
  /** Set by `train()`: milliseconds spent embedding the examples and fitting the head. */
  readonly training?: { examples: number; embed_ms: number; fit_ms: number; iterations: number; converged: boolean };
}

export interface PipelineByTask {
  'text-classification': TextClassificationPipeline;
  'sentiment-analysis': TextClassificationPipeline;
  'token-classification': TokenClassificationPipeline;
  ner: TokenClassificationPipeline;
  'question-answering': QuestionAnsweringPipeline;
  'feature-extraction': FeatureExtractionPipeline;
  embeddings: FeatureExtractionPipeline;
  'fill-mask': FillMaskPipeline;
  'text-scoring': TextScoringPipeline;
  'next-sentence-prediction': NextSentencePipeline;
  'zero-shot-classification': ZeroShotPipeline;
}

export function pipeline(
  task: 'text-classification' | 'sentiment-analysis',
  model: ModelSource,
  options: PipelineOptions & { head: HeadSource },
): Promise<TrainedClassifierPipeline>;
export function pipeline<T extends keyof PipelineByTask>(task: T, model: ModelSource, options?: PipelineOptions): Promise<PipelineByTask[T]>;

export interface RedactOptions {
  /**
   * `'type'` (default): `[EMAIL]`; `'mask'`: a fixed mask (`mask`, default `█████`) whatever the
   * length; `'pseudonym'`: `[GIVEN_NAME_1]`, the same number for every mention of the same text
   * of the same type (case and spacing aside).
   */
  style?: 'type' | 'mask' | 'pseudonym';
  mask?: string;
}
/** What `redact` takes: `ner()`'s entities, or any `{ label, start, end }` (UTF-16 offsets). */
export type RedactEntity =
  | Pick<Entity, 'entity' | 'entity_group' | 'start' | 'end'>
  | { label: string; start: number; end: number };

/**
 * `text` with every entity replaced. Entities of one type that touch or are joined by
 * non-space characters become one; a span grows to its whole whitespace-delimited token (less
 * punctuation and symbols at the token's edges that the entity did not reach) and never splits
 * a grapheme cluster, so no character of an entity stays. `B-`/`I-` prefixes are dropped.
 * The same Rust code as `webert redact` in the CLI, run synchronously on the WebAssembly module
 * of this context: a token-classification pipeline starts it; without one, `await
 * redact.ready()` first (calling it earlier throws).
 */
export const redact: {
  (text: string, entities: RedactEntity[], options?: RedactOptions): string;
  ready(): Promise<void>;
};

/**
 * Teaches a text classifier from labelled examples, in the page: each example's sentence
 * embedding (mean-pooled, L2-normalised: `feature-extraction` with `pooling: 'mean', normalize:
 * true`), then scikit-learn's `LogisticRegression(C)` fitted on them (multinomial for three or
 * more labels, one logistic vector for two), solved to convergence. `encoder`: a pipeline (its
 * model is shared, nothing loads again) or a model source loaded with `options`. Nothing leaves
 * the page. The result classifies as any text-classification pipeline does (single texts).
 */
export function train(
  task: 'text-classification' | 'sentiment-analysis',
  encoder: PipelineBase | ModelSource,
  examples: TrainingExample[],
  options?: TrainOptions,
): Promise<TrainedClassifierPipeline>;

/** Whether the browser exposes a WebGPU adapter (fallback adapters included). */
export function webgpuAvailable(): Promise<boolean>;

/** The WebGPU adapter the browser offers, or null. `device: 'auto'` skips fallback (CPU-emulated) adapters. */
export function webgpuAdapter(): Promise<{ name: string; isFallbackAdapter: boolean } | null>;

/** Deletes cached model files of `model` (a folder URL or model id), or all of them and the saved WebGPU tilings. */
/** Deletes cached files: a folder URL's or model id's (in Node, the id's folder under
 * `env.cacheDir`), or with no model all of them (in Node, `env.cacheDir`). */
export function clearCache(model?: string): Promise<void>;

/**
 * Where model ids are looked up; transformers.js's names and meanings. Set before `pipeline()`.
 * Ids are fetched from `{remoteHost}/{remotePathTemplate}{file}`, e.g.
 * `https://huggingface.co/Xenova/bert-base-NER/resolve/main/config.json`: config.json,
 * tokenizer.json, tokenizer_config.json when there, then only the weights used (following the
 * Hub's redirects), kept in the Cache API under those URLs.
 */
export const env: {
  /** Default `'https://huggingface.co'`: the Hub, or a mirror with its URL layout. */
  remoteHost: string;
  /** Default `'{model}/resolve/{revision}/'`. */
  remotePathTemplate: string;
  /** `false`: ids are never fetched from `remoteHost` (default true). */
  allowRemoteModels: boolean;
  /** Look for an id under `localModelPath` first (default: false in browsers, true in Node). */
  allowLocalModels: boolean;
  /** Default `'/models/'`: a URL path on the page's site, or a directory in Node. */
  localModelPath: string;
  /** `false`: pipelines default to `cache: false` (default true). */
  useBrowserCache: boolean;
  /** Node: where model ids' files are kept, in the CLI's layout (`{cacheDir}/{host}/{id}/{revision}/`),
   * so `webert … --cache-dir` on the same folder shares them; default `.cache/` in the package's
   * folder, as transformers.js. null in browsers. */
  cacheDir: string | null;
  /** Node: `false` keeps nothing on disk (default true). */
  useFSCache: boolean;
  /**
   * Browsers: how long, in ms, a worker whose pipelines were all disposed waits, its model
   * dropped, for the next pipeline with the same `threads` option, which then skips starting a
   * worker and its WebAssembly module (`info.workerReused`); default 5000, 0 ends it at
   * `dispose()` (and a worker already waiting, at the next load). Its WebAssembly memory, which cannot shrink, stays reserved meanwhile.
   */
  spareWorkerMs: number;
  /** transformers.js's ONNX Runtime settings: `onnx.wasm.numThreads` is the default `threads`; the rest is not read. */
  backends: { onnx: { wasm: { numThreads?: number; [key: string]: unknown }; webgpu: Record<string, unknown> } };
};
