//! A loaded model: config, tokenizer and an executor, plus padding of tokenized windows into
//! batches. Tasks talk to this, never to an executor directly.

use crate::cpu::{Batch, CpuExecutor, Output};
use crate::error::{Error, Result};
use crate::model::{Architecture, ModelConfig, ModelFiles, Plan, TextTokenizer, Windowing};
use std::sync::Mutex;
use tokenizers::Encoding;

/// Most windows run in one forward pass; bounds activation memory on long documents.
const MAX_BATCH: usize = 16;

pub struct Engine {
    pub config: ModelConfig,
    pub tokenizer: TextTokenizer,
    cpu: Mutex<CpuExecutor>,
    kernel: &'static str,
}

/// Per window: the hidden states `[len, h]` and the head's logits rows for it.
pub struct WindowOutput {
    pub hidden: Vec<f32>,
    pub logits: Vec<f32>,
}

impl Engine {
    pub fn load(files: ModelFiles) -> Result<Engine> {
        let (config, tokenizer, weights) = files.load()?;
        let plan = Plan::build(config.clone(), weights)?;
        let cpu = CpuExecutor::new(plan);
        let kernel = cpu.kernel_name();
        Ok(Engine {
            config,
            tokenizer,
            cpu: Mutex::new(cpu),
            kernel,
        })
    }

    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn from_dir(dir: impl AsRef<std::path::Path>) -> Result<Engine> {
        Engine::load(ModelFiles::from_dir(dir.as_ref())?)
    }

    /// The backend that ran, e.g. `cpu-avx512`.
    pub fn backend(&self) -> String {
        format!("cpu-{}", self.kernel)
    }

    pub fn architecture(&self) -> Architecture {
        self.config.architecture
    }

    pub fn require(&self, arch: Architecture, what: &'static str) -> Result<()> {
        if self.config.architecture != arch {
            return Err(Error::WrongHead(
                what,
                self.config.architecture.name().to_string(),
            ));
        }
        Ok(())
    }

    /// The longest window this model takes: the tokenizer's limit within the position table.
    pub fn max_len(&self) -> usize {
        let m = self.config.max_sequence_len();
        self.tokenizer.model_max_length.map_or(m, |t| t.min(m))
    }

    /// One window for a text (or pair). Inputs longer than the model takes fail unless
    /// `truncation` names a length (capped at the model's), which cuts them as HF's
    /// `truncation=True, max_length=n` does (longest first).
    pub fn encode(
        &self,
        text: &str,
        pair: Option<&str>,
        truncation: Option<usize>,
    ) -> Result<Encoding> {
        let max_len = self.max_len();
        if let Some(n) = truncation {
            let w = Windowing {
                max_len: n.min(max_len),
                stride: 0,
                only_second: false,
            };
            let mut windows = self.tokenizer.encode_windows(text, pair, w)?;
            return Ok(windows.swap_remove(0));
        }
        let enc = self.tokenizer.encode(text, pair)?;
        if enc.len() > max_len {
            return Err(Error::Input(format!(
                "input is {} tokens; the model takes at most {max_len} (enable truncation to cut it)",
                enc.len()
            )));
        }
        Ok(enc)
    }

    /// Runs windows through the encoder (and the head when `head`), in padded batches.
    /// `picked[w]` are token positions of window `w` whose head rows are wanted (fill-mask).
    pub fn run(
        &self,
        windows: &[Encoding],
        head: bool,
        picked: &[Vec<usize>],
    ) -> Result<Vec<WindowOutput>> {
        let mut out = Vec::with_capacity(windows.len());
        let h = self.config.hidden_size;
        let mut cpu = self.cpu.lock().unwrap_or_else(|p| p.into_inner());
        let (logit_cols, logit_rows) = (cpu.plan().logits_cols(), cpu.plan().logits_rows());
        for (chunk_i, chunk) in windows.chunks(MAX_BATCH).enumerate() {
            let batch = self.pad(chunk, picked.get(chunk_i * MAX_BATCH..).unwrap_or(&[]));
            let Output { hidden, logits } = cpu.forward(&batch, head)?;
            let l = batch.seq_len;
            let mut picked_row = 0;
            for (i, enc) in chunk.iter().enumerate() {
                let len = enc.len();
                let rows = match logit_rows {
                    Some(crate::model::Rows::Tokens) => i * l..i * l + len,
                    Some(crate::model::Rows::First) => i..i + 1,
                    Some(crate::model::Rows::Picked) => {
                        let n = picked.get(chunk_i * MAX_BATCH + i).map_or(0, Vec::len);
                        picked_row += n;
                        picked_row - n..picked_row
                    }
                    None => 0..0,
                };
                out.push(WindowOutput {
                    hidden: hidden[i * l * h..(i * l + len) * h].to_vec(),
                    logits: logits.as_ref().map_or(Vec::new(), |lg| {
                        lg[rows.start * logit_cols..rows.end * logit_cols].to_vec()
                    }),
                });
            }
        }
        Ok(out)
    }

    fn pad(&self, chunk: &[Encoding], picked: &[Vec<usize>]) -> Batch {
        let l = chunk.iter().map(Encoding::len).max().unwrap_or(0);
        let mut b = Batch {
            seq_len: l,
            ..Batch::default()
        };
        for (i, enc) in chunk.iter().enumerate() {
            b.ids.extend(enc.get_ids());
            b.ids
                .extend(std::iter::repeat_n(self.tokenizer.pad_id, l - enc.len()));
            let types = enc.get_type_ids().iter().map(|&t| {
                if self.config.type_vocab_size == 0 {
                    0
                } else {
                    t
                }
            });
            b.type_ids.extend(types);
            b.type_ids.extend(std::iter::repeat_n(0, l - enc.len()));
            b.lens.push(enc.len());
            if let Some(p) = picked.get(i) {
                b.picked.extend(p.iter().map(|&r| i * l + r));
            }
        }
        b
    }
}
