//! GEMM tilings chosen by timing. The first time a forward meets a GEMM shape, each candidate
//! tiling of it (64- or 16-row tiles, the reduction whole or split in up to 16 parts,
//! cooperative matrices where they are on) runs on the device, every dispatch timed by
//! timestamp queries, and the fastest is kept for that shape, per adapter and kernel choice,
//! for the life of the process (`tiling_cache.rs`). The rule's tiling (`GemmPlan::choose`) is
//! always a candidate and stays unless another beats it by `MARGIN`, so timing noise does not
//! move it.

use super::context::KernelChoice;
use super::gemm_plan::{GemmPlan, MIN_SPLIT_K};
use super::kernels::Kernel;
use super::weights::GemmWeights;

/// A GEMM shape as tuned: rows rounded up to a power of two (at least 16, a multiple of every
/// tile's height), so texts of nearby lengths share one timing: a forward of 100 rows takes
/// the tiling timed on 128.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GemmKey {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub weights: GemmWeights,
}

impl GemmKey {
    pub fn new(m: usize, n: usize, k: usize, weights: GemmWeights) -> GemmKey {
        GemmKey {
            m: m.next_power_of_two().max(16),
            n,
            k,
            weights,
        }
    }
}

/// The tiling kept for a shape, its GPU time, and the rule's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuned {
    pub plan: GemmPlan,
    pub ms: f64,
    pub rule: GemmPlan,
    pub rule_ms: f64,
    /// Timed by an earlier process and restored from its saved tilings (`saved.rs`).
    pub saved: bool,
}

impl Tuned {
    /// `timed 0.031 ms, rule 0.052 ms` (`timed 0.031 ms (saved), …` when restored), for `bench`.
    pub fn describe(&self) -> String {
        let saved = if self.saved { " (saved)" } else { "" };
        format!(
            "timed {:.4} ms{saved}, rule {:.4} ms",
            self.ms, self.rule_ms
        )
    }
}

/// A candidate replaces the rule's tiling only below this fraction of its time.
const MARGIN: f64 = 0.95;
const MAX_SPLIT: u32 = 16;
/// A grid of this many workgroups fills any GPU: it is not split further.
const FULL_GRID: usize = 1024;

/// The tilings to time for `key`, the rule's first.
pub fn candidates(choice: &KernelChoice, key: GemmKey) -> Vec<GemmPlan> {
    let GemmKey { m, n, k, weights } = key;
    let mut out = vec![GemmPlan::choose(choice, m, n, k, weights)];
    let mut kernels = vec![
        Kernel::gemm_tiled(k, weights, false),
        Kernel::gemm_tiled(k, weights, true),
    ];
    if weights == GemmWeights::F16 && choice.coop.is_some() && m > 32 {
        kernels.push(Kernel::GemmCoop);
    }
    for kernel in kernels {
        let grid = n.div_ceil(64) * m.div_ceil(kernel.tile_rows());
        let mut split_k = 1;
        loop {
            let plan = GemmPlan { kernel, split_k };
            if !out.contains(&plan) {
                out.push(plan);
            }
            let next = 2 * split_k;
            let more = weights.splits()
                && grid * (split_k as usize) < FULL_GRID
                && next <= MAX_SPLIT
                && k / next as usize >= MIN_SPLIT_K;
            if !more {
                break;
            }
            split_k = next;
        }
    }
    out
}

/// The tiling to keep from `timed` (the rule's first, each with its GPU ms).
pub fn pick(timed: &[(GemmPlan, f64)]) -> Option<Tuned> {
    let &(rule, rule_ms) = timed.first()?;
    let best = (timed.iter()).min_by(|a, b| a.1.total_cmp(&b.1))?;
    let (plan, ms) = if best.1 < MARGIN * rule_ms {
        *best
    } else {
        (rule, rule_ms)
    };
    Some(Tuned {
        plan,
        ms,
        rule,
        rule_ms,
        saved: false,
    })
}

/// Where a tiling was timed and for what: adapter identity, kernel choice and shape, the key
/// tilings are kept under in the process (`tiling_cache.rs`) and saved (`saved.rs`).
pub type CacheKey = (String, KernelChoice, GemmKey);

#[cfg(test)]
pub(super) mod tests {
    use super::super::kernels::Tile;
    use super::*;

    /// A hardware adapter's choice with f16 compute, tilings timed.
    pub(in crate::gpu) fn hardware() -> KernelChoice {
        KernelChoice {
            f16_weights: true,
            f16_compute: true,
            subgroups: false,
            coop: None,
            tile: None,
            hardware: true,
            lanes: false,
            tune: true,
        }
    }

    #[test]
    fn candidates_start_with_the_rule_and_split_only_small_grids() {
        let c = hardware();
        // bert-base FFN-out at 1 x 128 tokens: a 24-workgroup grid on 64-row tiles.
        let key = GemmKey::new(128, 768, 3072, GemmWeights::F32);
        let all = candidates(&c, key);
        assert_eq!(
            all[0],
            GemmPlan::choose(&c, 128, 768, 3072, GemmWeights::F32)
        );
        let has = |kernel, split_k| all.contains(&GemmPlan { kernel, split_k });
        assert!(has(Kernel::Gemm(Tile::Tall), 1) && has(Kernel::Gemm(Tile::Short), 1));
        assert!(has(Kernel::Gemm(Tile::Tall), 16) && has(Kernel::Gemm(Tile::Short), 16));
        assert!(!has(Kernel::Gemm(Tile::Short), 32));
        for (i, a) in all.iter().enumerate() {
            assert!(!all[i + 1..].contains(a), "{a:?} twice");
        }
        // 32 x 128 tokens: every grid is full; no split. Integer q8 never splits.
        let big = candidates(&c, GemmKey::new(4096, 3072, 768, GemmWeights::F32));
        assert!(big.iter().all(|p| p.split_k == 1), "{big:?}");
        let int = candidates(&c, GemmKey::new(128, 768, 3072, GemmWeights::Q8Int));
        assert_eq!(int.len(), 2);
        assert!(int.iter().all(|p| p.split_k == 1), "{int:?}");
        // A reduction too short to share is not split.
        let short = candidates(&c, GemmKey::new(16, 64, 200, GemmWeights::Q4));
        assert!(short.iter().all(|p| p.split_k == 1), "{short:?}");
        // Cooperative matrices join for f16 weights when on.
        let coop = KernelChoice {
            coop: Some(32),
            ..c
        };
        let all = candidates(&coop, GemmKey::new(128, 768, 768, GemmWeights::F16));
        assert!(all
            .iter()
            .any(|p| p.kernel == Kernel::GemmCoop && p.split_k == 1));
        assert!(all.iter().any(|p| p.kernel == Kernel::GemmF16(Tile::Short)));
    }

    #[test]
    fn the_rule_stays_unless_clearly_beaten() {
        let plan = |split_k| GemmPlan {
            kernel: Kernel::Gemm(Tile::Short),
            split_k,
        };
        let t = pick(&[(plan(1), 1.0), (plan(2), 0.97), (plan(4), 1.2)]).unwrap();
        assert_eq!((t.plan, t.ms, t.rule_ms), (plan(1), 1.0, 1.0));
        let t = pick(&[(plan(1), 1.0), (plan(2), 0.9), (plan(4), 0.6)]).unwrap();
        assert_eq!((t.plan, t.ms, t.rule), (plan(4), 0.6, plan(1)));
        assert!(pick(&[]).is_none());
    }

    #[test]
    fn rows_round_up_to_a_power_of_two_of_at_least_16() {
        let m = |rows| GemmKey::new(rows, 8, 8, GemmWeights::F32).m;
        assert_eq!(
            [m(0), m(1), m(16), m(17), m(100), m(128), m(129)],
            [16, 16, 16, 32, 128, 128, 256]
        );
    }
}
