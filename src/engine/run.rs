//! Running windows: padded into batches, forwarded on the GPU with the CPU to fall back on, and
//! the rows of each window taken back out.

use super::options::Device;
use super::{Engine, Watch};
use crate::error::{Error, GpuErrorKind, Result};
use crate::exec::{Batch, Output, Want};
use crate::model::Rows;
use std::sync::Arc;
use tokenizers::Encoding;

/// Most windows run in one forward pass; bounds activation memory on long documents.
const MAX_BATCH: usize = 32;

/// Per window: the hidden states `[len, h]` and the head's logits rows for it, each empty
/// when not asked for.
#[derive(Debug)]
pub struct WindowOutput {
    pub hidden: Vec<f32>,
    pub logits: Vec<f32>,
}

impl Engine {
    /// Runs windows through the encoder (and the head when `want` asks for logits), in padded
    /// batches. `picked[w]` are token positions of window `w` whose head rows are wanted
    /// (fill-mask).
    pub async fn run(
        &self,
        windows: &[Encoding],
        want: Want,
        picked: &[Vec<usize>],
    ) -> Result<Vec<WindowOutput>> {
        let mut out = Vec::with_capacity(windows.len());
        let h = self.config.hidden_size;
        let head = want.head_index().unwrap_or(0);
        let (logit_cols, logit_rows) = (self.plan.logits_cols(head), self.plan.logits_rows(head));
        let watch = self.watch.lock().unwrap().clone();
        // Watched: one window per forward on either executor, so that progress and cancelling
        // go by window (on a GPU, one submission and readback per window).
        let batch = if watch.is_some() { 1 } else { MAX_BATCH };
        for (chunk_i, chunk) in windows.chunks(batch).enumerate() {
            if let Some(w) = &watch {
                if !w.between(chunk_i * batch, windows.len()).await {
                    return Err(Error::Cancelled);
                }
            }
            let picked = picked.get(chunk_i * batch..).unwrap_or(&[]);
            let batch = self.pad(chunk, picked);
            let Output { hidden, logits } = self.forward(&batch, want).await?;
            let (hidden, logits) = (hidden.unwrap_or_default(), logits.unwrap_or_default());
            let l = batch.seq_len;
            let mut picked_row = 0;
            for (i, enc) in chunk.iter().enumerate() {
                let len = enc.len();
                let rows = match logit_rows.filter(|_| want.head()) {
                    Some(Rows::Tokens) => i * l..i * l + len,
                    Some(Rows::First) => i..i + 1,
                    Some(Rows::Picked) => {
                        let n = picked.get(i).map_or(0, Vec::len);
                        picked_row += n;
                        picked_row - n..picked_row
                    }
                    None => 0..0,
                };
                let hidden_rows = if want.hidden() {
                    i * l..i * l + len
                } else {
                    0..0
                };
                out.push(WindowOutput {
                    hidden: rows_of(&hidden, hidden_rows, h, "hidden state")?,
                    logits: rows_of(&logits, rows, logit_cols, "logits")?,
                });
            }
        }
        if let Some(w) = &watch {
            if !w.between(windows.len(), windows.len()).await {
                return Err(Error::Cancelled);
            }
        }
        Ok(out)
    }

    /// Watches the calls from now on (progress and cancelling by window), until set to `None`.
    pub fn set_watch(&self, watch: Option<Arc<dyn Watch>>) {
        *self.watch.lock().unwrap() = watch;
    }

    pub(super) fn pad(&self, chunk: &[Encoding], picked: &[Vec<usize>]) -> Batch {
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

    // The GPU's guard below is held across `.await`: the GPU serves one call at a time, which
    // also keeps its submissions ordered; the futures are therefore not `Send`. CPU calls each
    // take a state of their own and run at once.
    #[allow(clippy::await_holding_lock)]
    async fn forward(&self, batch: &Batch, want: Want) -> Result<Output> {
        #[cfg(any(test, feature = "test-hooks"))]
        if self
            .panic_next
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            panic!("a panic inside a forward pass, asked for by a test hook");
        }
        {
            let mut gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(g) = gpu.as_mut().filter(|g| g.failed.is_none()) {
                match g.exec.forward(batch, want).await {
                    Ok(out) => {
                        self.set_backend(format!("gpu {}", g.exec.adapter_name()));
                        return Ok(out);
                    }
                    Err(e) if self.device != Device::Auto => return Err(e),
                    // This call only: the CPU runs it and the GPU stays for the next.
                    Err(e) if e.gpu_kind().is_some_and(GpuErrorKind::keeps_device) => {}
                    Err(e) if e.gpu_kind().is_some() => g.failed = Some(e.to_string()),
                    Err(e) => return Err(e),
                }
            }
        }
        let out = self.cpu.forward(batch, want)?;
        self.set_backend(format!("cpu-{}", self.kernel));
        Ok(out)
    }
}

/// `rows` rows of `cols` values out of `values`; an error, not a panic, when an executor
/// returned fewer than the batch needs.
fn rows_of(
    values: &[f32],
    rows: std::ops::Range<usize>,
    cols: usize,
    what: &str,
) -> Result<Vec<f32>> {
    let span = rows.start * cols..rows.end * cols;
    values
        .get(span.clone())
        .map(<[f32]>::to_vec)
        .ok_or_else(|| {
            Error::Input(format!(
                "the executor returned {} {what} values; the batch needs {}",
                values.len(),
                span.end
            ))
        })
}
