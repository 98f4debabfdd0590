//! How near this machine's limits CPU forwards run: the bytes of packed weights a forward
//! streams against the single-thread read bandwidth (`cpu/bandwidth.rs`), and its multiply-adds
//! against the tile's peak (`cpu/peak.rs`). A forward takes at least the longer of the two, its
//! floor.

use super::clock::now_ms;
use super::Engine;
use crate::cpu::peak;
use crate::error::Result;
use crate::exec::Want;
use serde::Serialize;
use tokenizers::Encoding;

/// One forward's figures beside this machine's limits.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Roofline {
    /// Rows of the forward (sequences × tokens).
    pub tokens: usize,
    pub forward_ms: f64,
    /// Bytes of packed linear weights the encoder reads, each once.
    pub weight_bytes: usize,
    pub weight_gb_per_s: f64,
    /// This machine's single-thread read bandwidth.
    pub read_gb_per_s: f64,
    pub of_read_bandwidth: f64,
    /// The multiply-add peak (×1e9 per second) of the tile that multiplies the weights; absent
    /// for tiles it is not measured for (q4 blocks).
    pub peak_gmac_per_s: Option<f64>,
    /// The longer of streaming the weights and running the multiply-adds at peak.
    pub floor_ms: Option<f64>,
    pub of_floor: Option<f64>,
}

impl Engine {
    /// Parameters of the encoder's linears, counted from the config as BERT's layers.
    pub fn encoder_linear_params(&self) -> f64 {
        let c = &self.config;
        let (h, i) = (c.hidden_size as f64, c.intermediate_size as f64);
        c.num_layers as f64 * (4.0 * h * h + 2.0 * h * i)
    }

    /// FLOPs of the encoder (linears and attention matmuls) over `batch` sequences of `seq`
    /// tokens.
    pub fn encoder_flops(&self, batch: usize, seq: usize) -> f64 {
        let c = &self.config;
        let attention = 4.0 * (c.num_layers * batch * seq * seq * c.hidden_size) as f64;
        2.0 * (batch * seq) as f64 * self.encoder_linear_params() + attention
    }

    /// The single-thread multiply-add peak (×1e9 per second, operands in L1) of the tile that
    /// multiplies this model's linear weights on the CPU: its q8 tile where int8 weights are
    /// packed for one, else the f32 tile; `None` for other integer tiles (q4 blocks).
    pub fn cpu_peak_gmac_per_s(&self) -> Option<f64> {
        let cpu = &self.cpu.model;
        let kern = cpu.kernel();
        match cpu.int_kernel_name() {
            None => Some(peak::f32_gmac_per_s(kern, 5, now_ms)),
            Some(name) => (kern.q8.iter())
                .find(|q| q.name == name)
                .map(|q| peak::q8_gmac_per_s(q, 5, now_ms)),
        }
    }

    /// The roofline of a CPU forward of `batch` × `seq` tokens that took `forward_ms`, with the
    /// read bandwidth measured over `read_bytes` (well over the last-level cache).
    pub fn cpu_roofline(
        &self,
        batch: usize,
        seq: usize,
        forward_ms: f64,
        read_bytes: usize,
    ) -> Roofline {
        let weight_bytes = self.cpu_weight_bytes();
        let read_gb_per_s = Engine::read_bandwidth_gb_per_s(read_bytes);
        let weight_gb_per_s = weight_bytes as f64 / (forward_ms * 1e6);
        let peak_gmac_per_s = self.cpu_peak_gmac_per_s();
        let macs = self.encoder_flops(batch, seq) / 2.0;
        let floor_ms = peak_gmac_per_s
            .map(|p| (weight_bytes as f64 / (read_gb_per_s * 1e6)).max(macs / (p * 1e6)));
        Roofline {
            tokens: batch * seq,
            forward_ms,
            weight_bytes,
            weight_gb_per_s,
            read_gb_per_s,
            of_read_bandwidth: weight_gb_per_s / read_gb_per_s,
            peak_gmac_per_s,
            floor_ms,
            of_floor: floor_ms.map(|f| f / forward_ms),
        }
    }

    /// Times `runs` CPU forwards over `window` (after one untimed) and gives their median's
    /// roofline; `None` when the model runs on a GPU.
    pub async fn time_cpu_roofline(
        &self,
        window: &Encoding,
        runs: usize,
        read_bytes: usize,
    ) -> Result<Option<Roofline>> {
        if self.has_gpu() {
            return Ok(None);
        }
        let windows = std::slice::from_ref(window);
        self.run(windows, Want::Hidden, &[]).await?;
        let mut times = Vec::with_capacity(runs.max(1));
        for _ in 0..runs.max(1) {
            let t = now_ms();
            self.run(windows, Want::Hidden, &[]).await?;
            times.push(now_ms() - t);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        Ok(Some(self.cpu_roofline(1, window.len(), median, read_bytes)))
    }
}
