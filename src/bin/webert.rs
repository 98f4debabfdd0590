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

// A file per subcommand, and files for what they share, in webert/ (without `path`, this crate
// root's modules would be looked for in cli/).
#[cfg(not(target_arch = "wasm32"))]
#[path = "webert"]
mod cli {
    mod args;
    mod bench;
    mod classify;
    mod corpus;
    mod embed;
    mod fill_mask;
    mod hub;
    mod import_onnx;
    mod input;
    mod load;
    mod ner;
    mod next_sentence;
    mod output;
    mod qa;
    mod redact;
    mod score;
    mod tilings;
    mod train;

    use clap::{Parser, Subcommand};
    use webert::{Error, Result};

    #[derive(Parser)]
    #[command(
        name = "webert",
        version,
        about = "BERT-family encoders on CPU SIMD (and WebGPU): HF-pipeline-compatible JSON out",
        after_help = "Environment: WEBERT_ISA (CPU kernel: avx512, avx2, neon, scalar, ...), \
                      WEBERT_PREFETCH (0 or 1: the CPU GEMMs prefetch weights ahead; unset: as the CPU wants), \
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

    #[derive(Subcommand)]
    enum Cmd {
        /// Sentence embeddings (or ranking against --query)
        Embed(embed::EmbedArgs),
        /// Sequence classification; with --labels, zero-shot (NLI entailment or embedding similarity)
        Classify(classify::ClassifyArgs),
        /// Token classification (named entities, PII)
        Ner(ner::NerArgs),
        /// PII redaction: entities found (--patterns adds rule-based identifiers), then replaced
        Redact(redact::RedactArgs),
        /// Extractive question answering over --context (or --text)
        Qa(qa::QaArgs),
        /// Top-k tokens for each mask token
        FillMask(fill_mask::FillMaskArgs),
        /// Next-sentence prediction: does --pair follow --text? (BERT NSP / pre-training heads)
        NextSentence(next_sentence::NextSentenceArgs),
        /// Masked-LM pseudo-log-likelihood of each text, with every token's log-probability
        Score(score::ScoreArgs),
        /// Teach a classification head from labelled examples (JSON lines) on the model's sentence embeddings
        TrainClassifier(train::TrainArgs),
        /// Write an ONNX model's weights (dequantized to f32) as safetensors
        ImportOnnx(import_onnx::ImportArgs),
        /// Time forward passes: ms per sequence and sequences per second
        Bench(bench::BenchArgs),
    }

    pub async fn run() -> Result<()> {
        let cli = Cli::parse();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        match cli.threads {
            Some(0) => return Err(Error::Input("--threads must be at least 1".into())),
            Some(n) => webert::cpu::pool::set_threads(n),
            None => webert::cpu::pool::set_threads(cores),
        }
        let tilings_file = std::env::var_os("WEBERT_GPU_TILINGS").filter(|v| !v.is_empty());
        if let Some(path) = &tilings_file {
            tilings::restore(path.as_ref());
        }
        let result = command(cli.cmd).await;
        if let Some(path) = &tilings_file {
            tilings::save(path.as_ref());
        }
        result
    }

    async fn command(cmd: Cmd) -> Result<()> {
        match cmd {
            Cmd::Embed(a) => embed::run(a).await,
            Cmd::Classify(a) => classify::run(a).await,
            Cmd::Ner(a) => ner::run(a).await,
            Cmd::Redact(a) => redact::run(a).await,
            Cmd::Qa(a) => qa::run(a).await,
            Cmd::FillMask(a) => fill_mask::run(a).await,
            Cmd::NextSentence(a) => next_sentence::run(a).await,
            Cmd::Score(a) => score::run(a).await,
            Cmd::TrainClassifier(a) => train::run(a).await,
            Cmd::ImportOnnx(a) => import_onnx::run(a),
            Cmd::Bench(a) => bench::run(a).await,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::Cli;
        use clap::CommandFactory;
        use webert::tasks::registry::TASKS;

        /// Subcommands that run no task of the table.
        const NOT_TASKS: &[&str] = &["redact", "train-classifier", "import-onnx", "bench"];

        #[test]
        fn the_task_subcommands_are_the_tables() {
            let cli = Cli::command();
            // Also checks the defaults read from the table parse as their arguments' values.
            cli.clone().debug_assert();
            let subcommands: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
            for t in TASKS {
                assert!(
                    subcommands.contains(&t.cli),
                    "{}: no subcommand {}",
                    t.name,
                    t.cli
                );
            }
            for s in subcommands {
                assert!(
                    NOT_TASKS.contains(&s) || TASKS.iter().any(|t| t.cli == s),
                    "subcommand {s} runs no task of src/tasks/registry.rs"
                );
            }
        }
    }
}
