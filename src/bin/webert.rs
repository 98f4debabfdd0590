//! `webert` command line: run a Hugging Face model folder on text, print HF-shaped JSON.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    // Without a Wayland session, libwayland (loaded by the Vulkan driver while wgpu lists
    // adapters) prints "XDG_RUNTIME_DIR is invalid or not set" twice on every command; a
    // runtime dir with no display socket in it answers its question quietly.
    if std::env::var_os("XDG_RUNTIME_DIR").is_none()
        && std::env::var_os("WAYLAND_DISPLAY").is_none()
    {
        // SAFETY: first thing in main, before any thread exists.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir()) };
    }
    std::process::exit(match pollster::block_on(cli::run()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("webert: {e}");
            1
        }
    })
}

#[cfg(not(target_arch = "wasm32"))]
#[path = "webert/train.rs"]
mod train;

#[cfg(not(target_arch = "wasm32"))]
#[path = "webert/corpus.rs"]
mod corpus;

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use clap::{Args, Parser, Subcommand};
    use serde::Serialize;
    use std::io::BufRead;
    use std::path::PathBuf;
    use webert::engine::{Device, Engine, GpuOptions, LoadOptions};
    use webert::tasks::classify::ScoreFn;
    use webert::tasks::embed::Pooling;
    use webert::tasks::ner::Aggregation;
    use webert::tasks::{
        classify, embed, fill_mask, ner, next_sentence, qa, redact, scoring, zero_shot,
    };
    use webert::{Error, Result};

    #[derive(Parser)]
    #[command(
        name = "webert",
        version,
        about = "BERT-family encoders on CPU SIMD (and WebGPU): HF-pipeline-compatible JSON out",
        after_help = "Environment: WEBERT_ISA (CPU kernel: avx512, avx2, neon, scalar, ...), \
                      WEBERT_GPU_F16 (off: f32 GPU weights; storage: f16 weights; compute: f16 \
                      arithmetic too), WEBERT_GPU_SUBGROUPS, WEBERT_GPU_COOP and WEBERT_GPU_LANES (0 or 1: subgroup \
                      reductions, cooperative-matrix GEMMs, the kernels for CPU-emulated adapters), WEBERT_GPU_TILE (auto, 64, 16, 64:4 \
                      for 64-row tiles with the reduction split in 4), WEBERT_GPU_TUNE (1: GEMM tiles chosen by timing \
                      each shape's candidates on the device; 0: by rule; unset: timed on hardware adapters), \
                      WEBERT_GPU_TILINGS (a file: tilings timed by an earlier run are read from it, new ones saved to it), \
                      WEBERT_GPU_MAX_BINDING (bytes: lowers the GPU binding limit), \
                      WEBERT_GPU_WEIGHTS (packed: q4/q8 weights stay packed on the GPU; dequant; unset: packed on hardware adapters, \
                      and integer q8 everywhere), \
                      WEBERT_GPU_Q8 (int: integer dot products; float), \
                      WEBERT_QUANTIZED (int: integer kernels for q4/q8 weights, the default; f32), \
                      WEBERT_MEMORY_BUDGET (bytes for weights and activations, e.g. 4G; default 8G)"
    )]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
        /// CPU threads (default: every core the process may use, at most 16)
        #[arg(long, global = true)]
        threads: Option<usize>,
    }

    #[derive(Args)]
    struct Common {
        #[command(flatten)]
        model: super::hub::Source,
        /// Input text; repeat for several. Without it, texts are read from stdin, one per line.
        #[arg(long)]
        text: Vec<String>,
        /// Cut inputs longer than the model takes instead of failing
        #[arg(long)]
        truncate: bool,
        /// Cut inputs to this many tokens (implies --truncate)
        #[arg(long)]
        max_tokens: Option<usize>,
        /// auto: a hardware GPU if it beats the CPU at load, else the CPU (and the CPU if the GPU fails)
        #[arg(long, value_enum, default_value = "auto")]
        backend: Device,
    }

    impl Common {
        fn truncation(&self) -> Option<usize> {
            self.max_tokens.or(self.truncate.then_some(usize::MAX))
        }
    }

    #[derive(Subcommand)]
    enum Cmd {
        /// Sentence embeddings (or ranking against --query)
        Embed(EmbedArgs),
        /// Sequence classification; with --labels, zero-shot (NLI entailment or embedding similarity)
        Classify(ClassifyArgs),
        /// Token classification (named entities, PII)
        Ner(NerArgs),
        /// PII redaction: entities found (--patterns adds rule-based identifiers), then replaced
        Redact(RedactArgs),
        /// Extractive question answering over --context (or --text)
        Qa(QaArgs),
        /// Top-k tokens for each mask token
        FillMask(FillMaskArgs),
        /// Next-sentence prediction: does --pair follow --text? (BERT NSP / pre-training heads)
        NextSentence(NextSentenceArgs),
        /// Masked-LM pseudo-log-likelihood of each text, with every token's log-probability
        Score(ScoreArgs),
        /// Teach a classification head from labelled examples (JSON lines) on the model's sentence embeddings
        TrainClassifier(super::train::TrainArgs),
        /// Write an ONNX model's weights (dequantized to f32) as safetensors
        ImportOnnx(ImportArgs),
        /// Time forward passes: ms per sequence and sequences per second
        Bench(super::bench::BenchArgs),
    }

    #[derive(Args)]
    struct EmbedArgs {
        #[command(flatten)]
        c: Common,
        /// Pooling (default: a sentence-transformers folder's own, else mean)
        #[arg(long, value_enum)]
        pooling: Option<Pooling>,
        /// L2-normalise (default: where a sentence-transformers folder has a Normalize module)
        #[arg(long, conflicts_with = "no_normalize")]
        normalize: bool,
        /// Do not normalise, even where the folder's modules.json says to
        #[arg(long)]
        no_normalize: bool,
        /// Rank the texts by cosine similarity to this query
        #[arg(long, conflicts_with_all = ["input", "output"])]
        query: Option<String>,
        #[command(flatten)]
        corpus: super::corpus::CorpusArgs,
    }

    #[derive(Args)]
    struct ClassifyArgs {
        #[command(flatten)]
        c: Common,
        /// Second text of a pair
        #[arg(long)]
        pair: Option<String>,
        #[arg(long)]
        top_k: Option<usize>,
        /// Default: as the config says (softmax, or sigmoid for multi-label and one-logit heads)
        #[arg(long, value_enum)]
        function: Option<ScoreFn>,
        /// Comma-separated candidate labels: zero-shot classification (by entailment on an NLI
        /// classifier, by embedding similarity on any other encoder)
        #[arg(long)]
        labels: Option<String>,
        #[arg(long, alias = "template", default_value = "This example is {}.")]
        hypothesis_template: String,
        #[arg(long)]
        multi_label: bool,
        /// A head from train-classifier (safetensors): classify with it on the model's embeddings
        #[arg(long, conflicts_with_all = ["labels", "pair"])]
        head: Option<PathBuf>,
        #[command(flatten)]
        corpus: super::corpus::CorpusArgs,
    }

    #[derive(Args)]
    struct NerArgs {
        #[command(flatten)]
        c: Common,
        #[arg(long, value_enum, default_value = "none")]
        aggregation: Aggregation,
        /// Tokens shared by consecutive windows of long texts
        #[arg(long, default_value_t = 16)]
        stride: usize,
        /// Window length in tokens (default: the model's maximum)
        #[arg(long)]
        max_length: Option<usize>,
        #[command(flatten)]
        patterns: PatternArgs,
        #[command(flatten)]
        corpus: super::corpus::CorpusArgs,
    }

    #[derive(Args)]
    struct PatternArgs {
        /// Also find e-mails, phones, IBANs, card numbers, IP addresses and SSNs by validated rules
        #[arg(long)]
        patterns: bool,
        /// Also find every match of REGEX as an entity of type LABEL (repeatable)
        #[arg(long = "pattern", value_name = "LABEL=REGEX")]
        custom: Vec<String>,
    }

    impl PatternArgs {
        fn layer(&self) -> Result<Option<webert::tasks::patterns::Patterns>> {
            let mut custom = Vec::new();
            for p in &self.custom {
                let Some((label, regex)) = p.split_once('=') else {
                    return Err(Error::Input(format!("--pattern {p}: expected LABEL=REGEX")));
                };
                custom.push(webert::tasks::patterns::CustomPattern {
                    label: label.into(),
                    regex: regex.into(),
                });
            }
            let p = webert::tasks::patterns::Patterns::new(self.patterns, &custom)?;
            Ok((!p.is_empty()).then_some(p))
        }
    }

    #[derive(Args)]
    struct RedactArgs {
        #[command(flatten)]
        c: Common,
        #[arg(long, value_enum, default_value = "type")]
        style: redact::Style,
        /// The mask of --style mask
        #[arg(long, default_value = redact::DEFAULT_MASK)]
        mask: String,
        #[arg(long, value_enum, default_value = "first")]
        aggregation: Aggregation,
        #[command(flatten)]
        patterns: PatternArgs,
        #[command(flatten)]
        corpus: super::corpus::CorpusArgs,
    }

    #[derive(Args)]
    struct QaArgs {
        #[command(flatten)]
        c: Common,
        #[arg(long)]
        question: String,
        #[arg(long)]
        context: Option<String>,
        #[arg(long, default_value_t = 1)]
        top_k: usize,
        #[arg(long)]
        max_seq_len: Option<usize>,
        #[arg(long)]
        doc_stride: Option<usize>,
        #[arg(long, default_value_t = 64)]
        max_question_len: usize,
        #[arg(long, default_value_t = 15)]
        max_answer_len: usize,
        #[arg(long)]
        handle_impossible_answer: bool,
    }

    #[derive(Args)]
    struct FillMaskArgs {
        #[command(flatten)]
        c: Common,
        #[arg(long, default_value_t = 5)]
        top_k: usize,
    }

    #[derive(Args)]
    struct NextSentenceArgs {
        #[command(flatten)]
        c: Common,
        /// The sentence that may follow each --text
        #[arg(long)]
        pair: String,
    }

    #[derive(Args)]
    struct ScoreArgs {
        #[command(flatten)]
        c: Common,
        /// Window length in tokens for long texts (default: the model's maximum)
        #[arg(long)]
        max_length: Option<usize>,
    }

    #[derive(Args)]
    struct ImportArgs {
        /// The .onnx file
        #[arg(long)]
        onnx: PathBuf,
        #[arg(long)]
        out: PathBuf,
    }

    fn texts(c: &Common) -> Result<Vec<String>> {
        if !c.text.is_empty() {
            return Ok(c.text.clone());
        }
        let lines: std::io::Result<Vec<String>> = std::io::stdin().lock().lines().collect();
        let lines = lines.map_err(|e| Error::Io {
            path: "stdin".into(),
            source: e,
        })?;
        if lines.is_empty() {
            return Err(Error::Input(
                "no input: pass --text or lines on stdin".into(),
            ));
        }
        Ok(lines)
    }

    /// One item as itself, several as a list; then the backend that ran on stderr.
    fn print<T: Serialize>(engine: &Engine, items: Vec<T>) -> Result<()> {
        report(engine);
        let json = if items.len() == 1 {
            serde_json::to_string_pretty(&items[0])
        } else {
            serde_json::to_string_pretty(&items)
        };
        println!("{}", json.map_err(|e| Error::Input(e.to_string()))?);
        Ok(())
    }

    /// Load options from a backend and the `WEBERT_*` variables (a malformed value is an error).
    pub fn options(device: Device) -> Result<LoadOptions> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let (f16, f16_compute) = match var("WEBERT_GPU_F16").as_deref() {
            None => (None, None),
            Some("0" | "off") => (Some(false), Some(false)),
            Some("1" | "storage") => (Some(true), Some(false)),
            Some("compute") => (Some(true), Some(true)),
            Some(o) => {
                return Err(Error::Input(format!(
                    "WEBERT_GPU_F16={o}: use off (f32), storage (f16 weights) or compute (f16 arithmetic)"
                )))
            }
        };
        let switch = |name: &str| match var(name).as_deref() {
            None => Ok(None),
            Some("0") => Ok(Some(false)),
            Some("1") => Ok(Some(true)),
            Some(o) => Err(Error::Input(format!("{name}={o}: use 0 or 1"))),
        };
        let tile = match var("WEBERT_GPU_TILE").as_deref() {
            None | Some("auto") => None,
            Some(t) => Some(
                t.parse()
                    .map_err(|e| Error::Input(format!("WEBERT_GPU_TILE: {e}")))?,
            ),
        };
        let kernels = webert::engine::KernelOptions {
            subgroups: switch("WEBERT_GPU_SUBGROUPS")?,
            f16_compute,
            coop: switch("WEBERT_GPU_COOP")?,
            tile,
            lanes: switch("WEBERT_GPU_LANES")?,
            tune: switch("WEBERT_GPU_TUNE")?,
        };
        let max_binding = match var("WEBERT_GPU_MAX_BINDING") {
            None => None,
            Some(v) => Some(v.parse().map_err(|_| {
                Error::Input(format!(
                    "WEBERT_GPU_MAX_BINDING={v}: expected a number of bytes"
                ))
            })?),
        };
        let dequantize = match var("WEBERT_GPU_WEIGHTS").as_deref() {
            None => None,
            Some("packed") => Some(false),
            Some("dequant") => Some(true),
            Some(o) => {
                return Err(Error::Input(format!(
                    "WEBERT_GPU_WEIGHTS={o}: use packed or dequant"
                )))
            }
        };
        let q8_int = match var("WEBERT_GPU_Q8").as_deref() {
            None => None,
            Some("int") => Some(true),
            Some("float") => Some(false),
            Some(o) => return Err(Error::Input(format!("WEBERT_GPU_Q8={o}: use int or float"))),
        };
        let quantized = match var("WEBERT_QUANTIZED").as_deref() {
            None | Some("int") => webert::engine::Quantized::Int,
            Some("f32") => webert::engine::Quantized::F32,
            Some(o) => {
                return Err(Error::Input(format!(
                    "WEBERT_QUANTIZED={o}: use int or f32"
                )))
            }
        };
        let memory_budget = match var("WEBERT_MEMORY_BUDGET") {
            None => None,
            Some(v) => Some(webert::byte_sizes::parse(&v).ok_or_else(|| {
                Error::Input(format!(
                    "WEBERT_MEMORY_BUDGET={v}: expected bytes, e.g. 4G or 512M"
                ))
            })?),
        };
        Ok(LoadOptions {
            device,
            gpu: GpuOptions {
                max_binding,
                f16,
                kernels,
                dequantize,
                q8_int,
            },
            isa: var("WEBERT_ISA"),
            quantized,
            memory_budget,
            ..Default::default()
        })
    }

    async fn load(c: &Common) -> Result<Engine> {
        Engine::load(c.model.files()?, options(c.backend)?).await
    }

    fn report(engine: &Engine) {
        match (engine.gpu_failure(), engine.probe()) {
            (Some(why), _) => {
                eprintln!("webert: backend {} (GPU given up: {why})", engine.backend())
            }
            (None, Some(probe)) => eprintln!("webert: backend {} ({probe})", engine.backend()),
            (None, None) => eprintln!("webert: backend {}", engine.backend()),
        }
    }

    pub async fn run() -> Result<()> {
        let cli = Cli::parse();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        match cli.threads {
            Some(0) => return Err(Error::Input("--threads must be at least 1".into())),
            Some(n) => webert::cpu::pool::set_threads(n),
            None => webert::cpu::pool::set_threads(cores),
        }
        let tilings = std::env::var_os("WEBERT_GPU_TILINGS").filter(|v| !v.is_empty());
        if let Some(path) = &tilings {
            restore_tilings(path.as_ref());
        }
        let result = command(cli.cmd).await;
        if let Some(path) = &tilings {
            save_tilings(path.as_ref());
        }
        result
    }

    /// Reads GEMM tilings timed by an earlier run (`WEBERT_GPU_TILINGS`); a missing file is a
    /// first run, an unreadable one is timed anew.
    fn restore_tilings(path: &std::path::Path) {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                return eprintln!(
                    "webert: {}: {e}; GPU tilings are timed anew",
                    path.display()
                )
            }
        };
        if let Err(e) = webert::engine::import_gpu_tilings(&text) {
            eprintln!(
                "webert: {}: {e}; GPU tilings are timed anew",
                path.display()
            );
        }
    }

    /// Keeps the GEMM tilings this run timed, with those it read, for the next run.
    fn save_tilings(path: &std::path::Path) {
        if webert::engine::gpu_tilings_timed() == 0 {
            return;
        }
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)?;
            }
            // Written whole, then renamed over the old file: never a half-written file.
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, webert::engine::export_gpu_tilings())?;
            std::fs::rename(&tmp, path)
        };
        if let Err(e) = write() {
            eprintln!("webert: {}: GPU tilings not saved: {e}", path.display());
        }
    }

    async fn command(cmd: Cmd) -> Result<()> {
        match cmd {
            Cmd::Embed(a) => embed(a).await,
            Cmd::Classify(a) => classify(a).await,
            Cmd::Ner(a) => ner(a).await,
            Cmd::Redact(a) => redact(a).await,
            Cmd::Qa(a) => qa(a).await,
            Cmd::FillMask(a) => fill_mask(a).await,
            Cmd::NextSentence(a) => next_sentence(a).await,
            Cmd::Score(a) => score(a).await,
            Cmd::TrainClassifier(a) => super::train::run(a).await,
            Cmd::ImportOnnx(a) => import_onnx(a),
            Cmd::Bench(a) => super::bench::run(a).await,
        }
    }

    async fn embed(a: EmbedArgs) -> Result<()> {
        let engine = load(&a.c).await?;
        let normalize = match (a.normalize, a.no_normalize) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        };
        let opts =
            embed::EmbedOptions::for_model(&engine.config, a.pooling, normalize, a.c.truncation())?;
        if a.corpus.active() {
            report(&engine);
            return super::corpus::run(&a.corpus, &a.c.text, async |items| {
                let refs: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
                let vectors = embed::embed(&engine, &refs, opts).await?;
                Ok(vectors)
            })
            .await;
        }
        let texts = texts(&a.c)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let Some(q) = a.query else {
            let out = embed::embed(&engine, &refs, opts).await?;
            return print(&engine, out);
        };
        #[derive(Serialize)]
        struct Ranked<'a> {
            corpus_id: usize,
            score: f32,
            text: &'a str,
        }
        let ranked = embed::rank(&engine, &q, &refs, opts).await?;
        let out: Vec<Ranked> = (ranked.into_iter())
            .map(|(i, score)| Ranked {
                corpus_id: i,
                score,
                text: refs[i],
            })
            .collect();
        // A ranking is always a list, even of one.
        print(&engine, vec![out])
    }

    async fn classify(a: ClassifyArgs) -> Result<()> {
        let head = a.head.as_deref().map(super::train::read_head).transpose()?;
        let engine = load(&a.c).await?;
        let opts = classify::ClassifyOptions {
            top_k: a.top_k,
            function: a.function.unwrap_or_default(),
            truncation: a.c.truncation(),
        };
        let labels: Option<Vec<&str>> = a.labels.as_deref().map(|l| {
            (l.split(',').map(str::trim))
                .filter(|l| !l.is_empty())
                .collect()
        });
        let zs = zero_shot::ZeroShotOptions {
            hypothesis_template: a.hypothesis_template.clone(),
            multi_label: a.multi_label,
            truncation: a.c.truncation(),
        };
        let method = zero_shot::method(&engine);
        // One answer per item, the same in both modes: a taught head, zero-shot, or the model's own.
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Answer {
            Labels(Vec<webert::tasks::LabelScore>),
            ZeroShot {
                sequence: String,
                method: zero_shot::Method,
                labels: Vec<String>,
                scores: Vec<f32>,
            },
        }
        let answer = async |items: &[super::corpus::Item]| -> Result<Vec<Answer>> {
            let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
            let labelled = |v: Vec<_>| v.into_iter().map(Answer::Labels).collect();
            if let Some(head) = &head {
                let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
                return Ok(labelled(
                    super::train::classify(&engine, head, &owned, opts).await?,
                ));
            }
            if let Some(labels) = &labels {
                let ranked = zero_shot::zero_shot_many(&engine, &texts, labels, &zs).await?;
                let out = (texts.iter().zip(ranked)).map(|(t, r)| Answer::ZeroShot {
                    sequence: t.to_string(),
                    method,
                    labels: r.iter().map(|l| l.label.clone()).collect(),
                    scores: r.iter().map(|l| l.score).collect(),
                });
                return Ok(out.collect());
            }
            let inputs: Vec<(&str, Option<&str>)> = (items.iter())
                .map(|i| (i.text.as_str(), i.pair.as_deref().or(a.pair.as_deref())))
                .collect();
            Ok(labelled(classify::classify(&engine, &inputs, opts).await?))
        };
        if a.corpus.active() {
            report(&engine);
            return super::corpus::run(&a.corpus, &a.c.text, answer).await;
        }
        let items: Vec<super::corpus::Item> = (texts(&a.c)?.into_iter().enumerate())
            .map(|(i, text)| super::corpus::Item {
                line: i + 1,
                id: None,
                text,
                pair: None,
            })
            .collect();
        print(&engine, answer(&items).await?)
    }

    async fn ner(a: NerArgs) -> Result<()> {
        let engine = load(&a.c).await?;
        let opts = ner::NerOptions {
            aggregation: a.aggregation,
            stride: a.stride,
            max_len: a.max_length,
            patterns: a.patterns.layer()?,
            ..Default::default()
        };
        if a.corpus.active() {
            report(&engine);
            return super::corpus::run(&a.corpus, &a.c.text, async |items| {
                let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
                ner::ner_many(&engine, &texts, &opts).await
            })
            .await;
        }
        let mut out = Vec::new();
        for t in texts(&a.c)? {
            out.push(ner::ner(&engine, &t, &opts).await?);
        }
        print(&engine, out)
    }

    async fn redact(a: RedactArgs) -> Result<()> {
        let opts = ner::NerOptions {
            aggregation: a.aggregation,
            patterns: a.patterns.layer()?,
            ..Default::default()
        };
        let style = redact::RedactOptions {
            style: a.style,
            mask: Some(a.mask),
        };
        #[derive(Serialize)]
        struct Out {
            text: String,
            entities: Vec<webert::tasks::entity::Entity>,
        }
        let engine = load(&a.c).await?;
        let one = |t: &str, entities: Vec<webert::tasks::entity::Entity>| -> Result<Out> {
            let targets: Vec<redact::Target> = entities.iter().map(Into::into).collect();
            let text = redact::redact(t, &targets, &style)?.text;
            Ok(Out { text, entities })
        };
        if a.corpus.active() {
            report(&engine);
            return super::corpus::run(&a.corpus, &a.c.text, async |items| {
                let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
                let found = ner::ner_many(&engine, &texts, &opts).await?;
                texts.iter().zip(found).map(|(t, e)| one(t, e)).collect()
            })
            .await;
        }
        let mut out = Vec::new();
        for t in texts(&a.c)? {
            let entities = ner::ner(&engine, &t, &opts).await?;
            out.push(one(&t, entities)?);
        }
        print(&engine, out)
    }

    async fn qa(a: QaArgs) -> Result<()> {
        let engine = load(&a.c).await?;
        let contexts = match a.context {
            Some(ctx) => vec![ctx],
            None => texts(&a.c)?,
        };
        let opts = qa::QaOptions {
            top_k: a.top_k,
            max_seq_len: a.max_seq_len,
            doc_stride: a.doc_stride,
            max_question_len: a.max_question_len,
            max_answer_len: a.max_answer_len,
            handle_impossible_answer: a.handle_impossible_answer,
            align_to_words: true,
        };
        let mut out = Vec::new();
        for ctx in &contexts {
            let answers = qa::answer(&engine, &a.question, ctx, &opts).await?;
            out.push(match a.top_k {
                1 => serde_json::json!(answers.first()),
                _ => serde_json::json!(answers),
            });
        }
        print(&engine, out)
    }

    async fn fill_mask(a: FillMaskArgs) -> Result<()> {
        let engine = load(&a.c).await?;
        let mut out = Vec::new();
        for t in texts(&a.c)? {
            let mut p = fill_mask::fill_mask(&engine, &t, a.top_k, a.c.truncation()).await?;
            out.push(match p.len() {
                1 => serde_json::json!(p.remove(0)),
                _ => serde_json::json!(p),
            });
        }
        print(&engine, out)
    }

    async fn next_sentence(a: NextSentenceArgs) -> Result<()> {
        let engine = load(&a.c).await?;
        let texts = texts(&a.c)?;
        let pairs: Vec<(&str, &str)> = (texts.iter())
            .map(|t| (t.as_str(), a.pair.as_str()))
            .collect();
        let out = next_sentence::next_sentence(&engine, &pairs, a.c.truncation()).await?;
        print(&engine, out)
    }

    async fn score(a: ScoreArgs) -> Result<()> {
        if a.c.truncation().is_some() {
            return Err(Error::Input(
                "score reads long texts in windows (--max-length); --truncate and --max-tokens do not apply".into(),
            ));
        }
        let engine = load(&a.c).await?;
        let texts = texts(&a.c)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let opts = scoring::ScoreOptions {
            max_len: a.max_length,
        };
        print(&engine, scoring::score(&engine, &refs, opts).await?)
    }

    fn import_onnx(a: ImportArgs) -> Result<()> {
        let bytes = std::fs::read(&a.onnx).map_err(|e| Error::Io {
            path: a.onnx.display().to_string(),
            source: e,
        })?;
        // Module names follow the family in the model folder's config.json (`onnx/model.onnx`
        // sits one level below it); BERT's without one.
        let dir = a.onnx.parent();
        let config = [dir, dir.and_then(|d| d.parent())]
            .into_iter()
            .flatten()
            .map(|d| d.join("config.json"))
            .find(|p| p.is_file());
        let family = match config {
            Some(p) => {
                let text = std::fs::read_to_string(&p).map_err(|e| Error::Io {
                    path: p.display().to_string(),
                    source: e,
                })?;
                webert::model::ModelConfig::from_json(&p.display().to_string(), &text)?.model_type
            }
            None => webert::model::ModelType::Bert,
        };
        let w = webert::model::onnx::import_as(&a.onnx.display().to_string(), &bytes, family)?;
        let st = w.to_safetensors()?;
        std::fs::write(&a.out, st).map_err(|e| Error::Io {
            path: a.out.display().to_string(),
            source: e,
        })?;
        eprintln!("wrote {} tensors to {}", w.len(), a.out.display());
        Ok(())
    }
}

#[cfg(not(target_arch = "wasm32"))]
#[path = "webert/hub.rs"]
mod hub;

#[cfg(not(target_arch = "wasm32"))]
mod bench {
    use clap::Args;
    use std::time::Instant;
    use webert::engine::{Device, Engine, Want};
    use webert::{Error, Result};

    #[derive(Args)]
    pub struct BenchArgs {
        #[command(flatten)]
        model: super::hub::Source,
        #[arg(long, default_value_t = 1)]
        batch: usize,
        #[arg(long, default_value_t = 128)]
        seq_len: usize,
        #[arg(long, default_value_t = 20)]
        runs: usize,
        /// Untimed calls before the timed ones; the first (timed alone as `first_ms`: buffers
        /// built, GEMM tilings timed) always runs
        #[arg(long, default_value_t = 3)]
        warmup: usize,
        #[arg(long, value_enum, default_value = "cpu")]
        backend: Device,
        /// Time a standard shape (bert-base, bert-large, minilm-l6, HxLxAxI, or `config`: the
        /// folder's own) of the folder's family with random weights, using --model only for
        /// its config and tokenizer
        #[arg(long)]
        shape: Option<String>,
        /// Run the task head too; with a GPU, also time the head alone on the CPU
        #[arg(long)]
        head: bool,
        /// With --shape: quantize the random encoder weights (q4: 4-bit blocks of 32; q8: int8
        /// per channel), as the transformers.js exports are
        #[arg(long)]
        quant: Option<String>,
    }

    async fn load(a: &BenchArgs) -> Result<Engine> {
        let options = super::cli::options(a.backend)?;
        let Some(shape) = &a.shape else {
            return Engine::load(a.model.files()?, options).await;
        };
        // A local folder needs no weights here (its config at `--shape config`).
        let local = std::path::Path::new(&a.model.model);
        let (config, tokenizer) = match local.is_dir() {
            true => webert::model::ModelFiles::config_and_tokenizer_of(local)?,
            false => {
                let (config, tokenizer, _) = a.model.files()?.load()?;
                (config, tokenizer)
            }
        };
        let quantize = match a.quant.as_deref() {
            None => None,
            Some(q @ ("q4" | "q8")) => Some(q == "q8"),
            Some(q) => return Err(Error::Input(format!("--quant {q}: use q4 or q8"))),
        };
        let fabricate = webert::model::synthetic::Fabricate { seed: 42, quantize };
        let (config, weights) = webert::model::synthetic::random_model(config, shape, fabricate)
            .ok_or_else(|| {
                Error::Input(format!(
                    "unknown shape `{shape}`; use bert-base, bert-large, minilm-l6, HxLxAxI or config"
                ))
            })?;
        Engine::build(config, tokenizer, weights, options).await
    }

    /// FLOPs of the encoder's linears and attention for `batch` sequences of `seq` tokens, and
    /// the bytes of its linear weights (f16 when the backend stores them so).
    fn work(engine: &Engine, batch: usize, seq: usize) -> (f64, f64) {
        let c = &engine.config;
        let (h, i, l) = (
            c.hidden_size as f64,
            c.intermediate_size as f64,
            c.num_layers as f64,
        );
        let tokens = (batch * seq) as f64;
        let params = l * (4.0 * h * h + 2.0 * h * i);
        let attention = l * 4.0 * batch as f64 * (seq * seq) as f64 * h;
        let width = if engine.backend().contains("f16 weights") {
            2.0
        } else {
            4.0
        };
        (2.0 * tokens * params + attention, params * width)
    }

    /// The process's peak resident set (Linux's `VmHWM`; a CPU-emulated GPU's memory too).
    fn peak_rss_kb() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// How far the GPU's hidden state of the first window (in the batch as timed) is from the
    /// CPU's: cosine and largest difference.
    async fn cpu_parity(
        engine: &Engine,
        windows: &[tokenizers::Encoding],
    ) -> Result<serde_json::Value> {
        let gpu = engine.run(windows, Want::Hidden, &[]).await?;
        let cpu = engine.cpu_hidden(&windows[0])?;
        let (a, b) = (&gpu[0].hidden, &cpu);
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| (p * q) as f64).sum::<f64>();
        let cosine = dot(a, b) / (dot(a, a) * dot(b, b)).sqrt();
        let max_diff = (a.iter().zip(b))
            .map(|(p, q)| (p - q).abs())
            .fold(0.0f32, f32::max);
        Ok(serde_json::json!({ "cosine": cosine, "max_abs_diff": max_diff, "values": a.len() }))
    }

    /// Times the encoder (and the head with `head`) on `batch` copies of a text of exactly
    /// `seq_len` tokens.
    pub async fn run(a: BenchArgs) -> Result<()> {
        let engine = load(&a).await?;
        let want = if a.head { Want::Logits } else { Want::Hidden };
        let words =
            "the quick brown fox jumps over the lazy dog while a curious cat watches quietly ";
        let mut text = String::new();
        while engine.tokenizer.encode(&text, None)?.len() < a.seq_len {
            text.push_str(words);
        }
        let enc = engine.encode(&text, None, Some(a.seq_len))?;
        let windows = vec![enc; a.batch];
        // The first call builds the shape's buffers (and times its GEMM tilings).
        let t = Instant::now();
        engine.run(&windows, want, &[]).await?;
        let first_ms = t.elapsed().as_secs_f64() * 1e3;
        for _ in 1..a.warmup {
            engine.run(&windows, want, &[]).await?;
        }
        let mut times = Vec::with_capacity(a.runs);
        for _ in 0..a.runs.max(1) {
            let t = Instant::now();
            engine.run(&windows, want, &[]).await?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let parity = match engine.backend().starts_with("gpu") {
            true => Some(cpu_parity(&engine, &windows).await?),
            false => None,
        };
        let gpu = engine.gpu_profile(&windows, want).await?;
        let cpu_head = match a.head {
            true => Some(engine.cpu_head_ms(&windows, a.runs)?),
            false => None,
        };
        let gpu_total: Option<f64> = gpu.as_ref().map(|k| k.iter().map(|(_, ms)| ms).sum());
        let gemms = engine.gpu_gemm_plans(&windows);
        let (flops, weight_bytes) = work(&engine, a.batch, a.seq_len);
        let per_kernel: Option<serde_json::Value> = gpu.map(|k| {
            k.into_iter()
                .map(|(name, ms)| (name.to_string(), serde_json::json!(ms)))
                .collect()
        });
        let mut label = a.shape.clone().unwrap_or_else(|| a.model.model.clone());
        if let Some(q) = &a.quant {
            label = format!("{label} {q}");
        }
        let weights = engine.gpu_weight_bytes();
        println!(
            "{}",
            serde_json::json!({
                "gpu_ms_by_kernel": per_kernel,
                "gpu_ms": gpu_total,
                "gpu_gemms": gemms,
                "gpu_gemm_timings": engine.gpu_gemm_timings(),
                "cpu_parity": parity,
                "cpu_head_ms": cpu_head,
                "gpu_weight_bytes": weights.map(|w| w.uploaded),
                "gpu_weight_bytes_dequantized": weights.map(|w| w.dequantized),
                "gpu_gemm_weight_bytes": weights.map(|w| w.gemm_uploaded),
                "gpu_gemm_weight_bytes_dequantized": weights.map(|w| w.gemm_dequantized),
                "model": label,
                "backend": engine.backend(),
                "batch": a.batch,
                "seq_len": a.seq_len,
                "peak_rss_mib": peak_rss_kb().map(|kb| kb as f64 / 1024.0),
                "runs": times.len(),
                "first_ms": first_ms,
                "median_ms": median,
                "min_ms": times[0],
                "ms_per_sequence": median / a.batch as f64,
                "encoder_tflop_per_s": flops / (median * 1e9),
                "encoder_weight_gb_per_s": weight_bytes / (median * 1e6),
                "sequences_per_s": a.batch as f64 * 1e3 / median,
            })
        );
        Ok(())
    }
}
