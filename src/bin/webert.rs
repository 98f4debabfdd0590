//! `webert` command line: run a Hugging Face model folder on text, print HF-shaped JSON.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    std::process::exit(match pollster::block_on(cli::run()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("webert: {e}");
            1
        }
    })
}

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use clap::{Args, Parser, Subcommand};
    use serde::Serialize;
    use std::io::BufRead;
    use std::path::PathBuf;
    use webert::engine::Engine;
    use webert::tasks::{classify, embed, fill_mask, ner, qa, zero_shot};
    use webert::{Error, Result};

    #[derive(Parser)]
    #[command(
        name = "webert",
        version,
        about = "BERT-family encoders on CPU SIMD (and WebGPU): HF-pipeline-compatible JSON out"
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
        /// Hugging Face model folder (config.json, tokenizer.json, model.safetensors or onnx/model*.onnx)
        #[arg(long)]
        model: PathBuf,
        /// Input text; repeat for several. Without it, texts are read from stdin, one per line.
        #[arg(long)]
        text: Vec<String>,
        /// Cut inputs longer than the model takes instead of failing
        #[arg(long)]
        truncate: bool,
        /// Cut inputs to this many tokens (implies --truncate)
        #[arg(long)]
        max_tokens: Option<usize>,
        /// auto (a hardware GPU if it beats the CPU at load, else CPU; CPU if the GPU fails) | gpu | cpu
        #[arg(long, default_value = "auto")]
        backend: String,
    }

    impl Common {
        fn truncation(&self) -> Option<usize> {
            self.max_tokens.or(self.truncate.then_some(usize::MAX))
        }
    }

    #[derive(Subcommand)]
    enum Cmd {
        /// Sentence embeddings (or ranking against --query)
        Embed {
            #[command(flatten)]
            c: Common,
            #[arg(long, default_value = "mean")]
            pooling: String,
            #[arg(long)]
            normalize: bool,
            /// Rank the texts by cosine similarity to this query
            #[arg(long)]
            query: Option<String>,
        },
        /// Sequence classification; with --labels, zero-shot by embedding similarity
        Classify {
            #[command(flatten)]
            c: Common,
            /// Second text of a pair
            #[arg(long)]
            pair: Option<String>,
            #[arg(long)]
            top_k: Option<usize>,
            /// softmax | sigmoid | none (default: as the config says)
            #[arg(long)]
            function: Option<String>,
            /// Comma-separated candidate labels: zero-shot classification
            #[arg(long)]
            labels: Option<String>,
            #[arg(long, default_value = "This example is {}.")]
            template: String,
            #[arg(long)]
            multi_label: bool,
        },
        /// Token classification (named entities, PII)
        Ner {
            #[command(flatten)]
            c: Common,
            #[arg(long, default_value = "none")]
            aggregation: String,
            /// Tokens shared by consecutive windows of long texts
            #[arg(long, default_value_t = 16)]
            stride: usize,
            /// Window length in tokens (default: the model's maximum)
            #[arg(long)]
            max_length: Option<usize>,
        },
        /// Extractive question answering over --context (or --text)
        Qa {
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
        },
        /// Top-k tokens for each mask token
        FillMask {
            #[command(flatten)]
            c: Common,
            #[arg(long, default_value_t = 5)]
            top_k: usize,
        },
        /// Write an ONNX model's weights (dequantized to f32) as safetensors
        ImportOnnx {
            /// The .onnx file
            #[arg(long)]
            onnx: PathBuf,
            #[arg(long)]
            out: PathBuf,
        },
        /// Time forward passes: ms per sequence and sequences per second
        Bench {
            #[arg(long)]
            model: PathBuf,
            #[arg(long, default_value_t = 1)]
            batch: usize,
            #[arg(long, default_value_t = 128)]
            seq_len: usize,
            #[arg(long, default_value_t = 20)]
            runs: usize,
            #[arg(long, default_value_t = 3)]
            warmup: usize,
            #[arg(long, default_value = "cpu")]
            backend: String,
            /// Time a standard shape (bert-base, bert-large, minilm-l6) with random weights,
            /// using --model only for its tokenizer and vocabulary
            #[arg(long)]
            shape: Option<String>,
            /// Run the task head too; with a GPU, also time the head alone on the CPU
            #[arg(long)]
            head: bool,
        },
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

    fn print<T: Serialize>(items: Vec<T>) -> Result<()> {
        let json = if items.len() == 1 {
            serde_json::to_string_pretty(&items[0])
        } else {
            serde_json::to_string_pretty(&items)
        };
        println!("{}", json.map_err(|e| Error::Input(e.to_string()))?);
        Ok(())
    }

    async fn load(c: &Common) -> Result<Engine> {
        let engine = Engine::from_dir_on(&c.model, c.backend.parse()?).await?;
        Ok(engine)
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
        match cli.cmd {
            Cmd::Embed {
                c,
                pooling,
                normalize,
                query,
            } => {
                let engine = load(&c).await?;
                let texts = texts(&c)?;
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let opts = embed::EmbedOptions {
                    pooling: pooling.parse()?,
                    normalize,
                    truncation: c.truncation(),
                };
                match query {
                    Some(q) => {
                        #[derive(Serialize)]
                        struct Ranked<'a> {
                            corpus_id: usize,
                            score: f32,
                            text: &'a str,
                        }
                        let ranked = embed::rank(&engine, &q, &refs, opts).await?;
                        let out: Vec<Ranked> = ranked
                            .into_iter()
                            .map(|(i, score)| Ranked {
                                corpus_id: i,
                                score,
                                text: refs[i],
                            })
                            .collect();
                        report(&engine);
                        println!(
                            "{}",
                            serde_json::to_string_pretty(&out)
                                .map_err(|e| Error::Input(e.to_string()))?
                        );
                        Ok(())
                    }
                    None => {
                        let out = embed::embed(&engine, &refs, opts).await?;
                        report(&engine);
                        print(out)
                    }
                }
            }
            Cmd::Classify {
                c,
                pair,
                top_k,
                function,
                labels,
                template,
                multi_label,
            } => {
                let engine = load(&c).await?;
                let texts = texts(&c)?;
                if let Some(labels) = labels {
                    let labels: Vec<&str> = labels
                        .split(',')
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .collect();
                    let opts = zero_shot::ZeroShotOptions {
                        hypothesis_template: template,
                        multi_label,
                    };
                    let mut out = Vec::new();
                    for t in &texts {
                        out.push(zero_shot::zero_shot(&engine, t, &labels, &opts).await?);
                    }
                    report(&engine);
                    return print(out);
                }
                let function = match function.as_deref() {
                    None => classify::ScoreFn::Auto,
                    Some("softmax") => classify::ScoreFn::Softmax,
                    Some("sigmoid") => classify::ScoreFn::Sigmoid,
                    Some("none") => classify::ScoreFn::None,
                    Some(o) => {
                        return Err(Error::Input(format!(
                            "unknown --function `{o}`; use softmax, sigmoid or none"
                        )))
                    }
                };
                let inputs: Vec<(&str, Option<&str>)> = texts
                    .iter()
                    .map(|t| (t.as_str(), pair.as_deref()))
                    .collect();
                let opts = classify::ClassifyOptions {
                    top_k,
                    function,
                    truncation: c.truncation(),
                };
                let out = classify::classify(&engine, &inputs, opts).await?;
                report(&engine);
                print(out)
            }
            Cmd::Ner {
                c,
                aggregation,
                stride,
                max_length,
            } => {
                let engine = load(&c).await?;
                let opts = ner::NerOptions {
                    aggregation: aggregation.parse()?,
                    stride,
                    max_len: max_length,
                    ..Default::default()
                };
                let mut out = Vec::new();
                for t in texts(&c)? {
                    out.push(ner::ner(&engine, &t, &opts).await?);
                }
                report(&engine);
                print(out)
            }
            Cmd::Qa {
                c,
                question,
                context,
                top_k,
                max_seq_len,
                doc_stride,
                max_question_len,
                max_answer_len,
                handle_impossible_answer,
            } => {
                let engine = load(&c).await?;
                let contexts = match context {
                    Some(ctx) => vec![ctx],
                    None => texts(&c)?,
                };
                let opts = qa::QaOptions {
                    top_k,
                    max_seq_len,
                    doc_stride,
                    max_question_len,
                    max_answer_len,
                    handle_impossible_answer,
                    align_to_words: true,
                };
                let mut out = Vec::new();
                for ctx in &contexts {
                    let a = qa::answer(&engine, &question, ctx, &opts).await?;
                    out.push(if top_k == 1 {
                        serde_json::json!(a.first())
                    } else {
                        serde_json::json!(a)
                    });
                }
                report(&engine);
                print(out)
            }
            Cmd::FillMask { c, top_k } => {
                let engine = load(&c).await?;
                let mut out = Vec::new();
                for t in texts(&c)? {
                    let mut p = fill_mask::fill_mask(&engine, &t, top_k, c.truncation()).await?;
                    out.push(if p.len() == 1 {
                        serde_json::json!(p.remove(0))
                    } else {
                        serde_json::json!(p)
                    });
                }
                report(&engine);
                print(out)
            }
            Cmd::ImportOnnx { onnx, out } => {
                let bytes = std::fs::read(&onnx).map_err(|e| Error::Io {
                    path: onnx.display().to_string(),
                    source: e,
                })?;
                let w = webert::model::onnx::import(&onnx.display().to_string(), &bytes)?;
                let st = w.to_safetensors()?;
                std::fs::write(&out, st).map_err(|e| Error::Io {
                    path: out.display().to_string(),
                    source: e,
                })?;
                eprintln!("wrote {} tensors to {}", w.len(), out.display());
                Ok(())
            }
            Cmd::Bench {
                model,
                batch,
                seq_len,
                runs,
                warmup,
                backend,
                shape,
                head,
            } => {
                let device = backend.parse()?;
                let engine = match &shape {
                    Some(s) => {
                        Engine::synthetic(webert::model::ModelFiles::from_dir(&model)?, s, device)
                            .await?
                    }
                    None => Engine::from_dir_on(&model, device).await?,
                };
                let label = shape.unwrap_or_else(|| model.display().to_string());
                super::bench::run(&engine, &label, batch, seq_len, runs, warmup, head).await
            }
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod bench {
    use std::time::Instant;
    use webert::engine::Engine;
    use webert::Result;

    /// Times the encoder (and the head with `head`) on `batch` copies of a text of exactly
    /// `seq_len` tokens.
    #[allow(clippy::too_many_arguments)]
    pub async fn run(
        engine: &Engine,
        model: &str,
        batch: usize,
        seq_len: usize,
        runs: usize,
        warmup: usize,
        head: bool,
    ) -> Result<()> {
        let words =
            "the quick brown fox jumps over the lazy dog while a curious cat watches quietly ";
        let mut text = String::new();
        while engine.tokenizer.encode(&text, None)?.len() < seq_len {
            text.push_str(words);
        }
        let enc = engine.encode(&text, None, Some(seq_len))?;
        let windows = vec![enc; batch];
        for _ in 0..warmup {
            engine.run(&windows, head, &[]).await?;
        }
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            engine.run(&windows, head, &[]).await?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let gpu = engine.gpu_profile(&windows, head).await?;
        let cpu_head = match head {
            true => Some(engine.cpu_head_ms(&windows, runs)?),
            false => None,
        };
        let gpu_total: Option<f64> = gpu.as_ref().map(|k| k.iter().map(|(_, ms)| ms).sum());
        let per_kernel: Option<serde_json::Value> = gpu.map(|k| {
            k.into_iter()
                .map(|(name, ms)| (name.to_string(), serde_json::json!(ms)))
                .collect()
        });
        println!(
            "{}",
            serde_json::json!({
                "gpu_ms_by_kernel": per_kernel,
                "gpu_ms": gpu_total,
                "cpu_head_ms": cpu_head,
                "model": model,
                "backend": engine.backend(),
                "batch": batch,
                "seq_len": seq_len,
                "runs": times.len(),
                "median_ms": median,
                "min_ms": times[0],
                "ms_per_sequence": median / batch as f64,
                "sequences_per_s": batch as f64 * 1e3 / median,
            })
        );
        Ok(())
    }
}
