//! The load-time timing of the GPU against the CPU under [`Device::Auto`](super::Device::Auto),
//! and its verdict.

/// The load-time timing under [`Device::Auto`]: one window of `tokens` tokens, encoder and
/// head, on each backend.
///
/// [`Device::Auto`]: super::Device::Auto
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub adapter: String,
    pub tokens: usize,
    /// Best of two, after a warm-up (pipeline compilation, buffer sizing).
    pub gpu_ms: f64,
    /// Best of one or two: a second run only when the first was slower than the GPU.
    pub cpu_ms: f64,
    /// How alike the two hidden states of the window are: their cosine once the CPU's mean
    /// token is taken from both (`centred_cosine`): 1 for the same answers, ~0 for unrelated
    /// ones.
    pub agreement: f64,
}

/// Below this `Probe::agreement` the GPU computes wrong answers (a driver's miscompiled
/// shader, say) and is given up however fast it is. Correct f16 or low-bit GPU kernels stay
/// above 0.99 of the CPU's.
pub const PROBE_AGREEMENT: f64 = 0.9;

impl Probe {
    /// The GPU is kept only when its answers agree with the CPU's and it is strictly faster
    /// (a NaN timing or agreement means the CPU).
    pub fn gpu_wins(&self) -> bool {
        self.agrees() && gpu_is_faster(self.gpu_ms, self.cpu_ms)
    }

    pub fn agrees(&self) -> bool {
        self.agreement >= PROBE_AGREEMENT
    }
}

pub(super) fn gpu_is_faster(gpu_ms: f64, cpu_ms: f64) -> bool {
    gpu_ms < cpu_ms
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} took {:.1} ms for {} tokens, the CPU path {:.1} ms; hidden states agree to {:.5}{}: using the {}",
            self.adapter,
            self.gpu_ms,
            self.tokens,
            self.cpu_ms,
            self.agreement,
            if self.agrees() { "" } else { " (wrong answers on the GPU)" },
            if self.gpu_wins() { "GPU" } else { "CPU" }
        )
    }
}

/// The probe's window length (capped at the model's).
pub(super) const PROBE_TOKENS: usize = 128;

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(gpu_ms: f64, cpu_ms: f64) -> Probe {
        Probe {
            agreement: 0.9999,
            adapter: "llvmpipe (Vulkan)".into(),
            tokens: 128,
            gpu_ms,
            cpu_ms,
        }
    }

    #[test]
    fn the_gpu_is_kept_only_when_strictly_faster() {
        assert!(probe(3.0, 80.0).gpu_wins());
        let wrong = |agreement| Probe {
            agreement,
            ..probe(3.0, 80.0)
        };
        assert!(!wrong(0.2).gpu_wins() && !wrong(f64::NAN).gpu_wins());
        assert!(wrong(0.2)
            .to_string()
            .ends_with("hidden states agree to 0.20000 (wrong answers on the GPU): using the CPU"));
        assert!(!probe(412.3, 80.1).gpu_wins());
        assert!(!probe(80.0, 80.0).gpu_wins());
        assert!(!probe(f64::NAN, 80.0).gpu_wins());
        assert!(!probe(3.0, f64::NAN).gpu_wins());
    }

    #[test]
    fn the_probe_explains_its_choice() {
        assert_eq!(
            probe(412.34, 80.06).to_string(),
            "llvmpipe (Vulkan) took 412.3 ms for 128 tokens, the CPU path 80.1 ms; hidden states agree to 0.99990: using the CPU"
        );
        assert!(probe(3.0, 80.0).to_string().ends_with("using the GPU"));
    }
}
