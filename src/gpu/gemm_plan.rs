//! How each GEMM is dispatched: its kernel, workgroup grid and the number of parts its
//! reduction is split into, by rule (`GemmPlan::choose`) or by the options' fixed tiling.

use super::context::KernelChoice;
use super::kernels::{Kernel, Tile};
use super::weights::GemmWeights;

/// How one GEMM is dispatched: its kernel, the workgroup grid over (columns, rows) and the
/// number of parts its reduction is split into (`> 1`: partial sums, then `GemmReduce`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GemmPlan {
    pub kernel: Kernel,
    pub split_k: u32,
}

/// Workgroups a hardware GPU wants in flight per GEMM before it is worth splitting the
/// reduction: a large GPU has ~100+ compute units, each holding several workgroups.
const HARDWARE_GROUPS: usize = 512;
/// The shortest reduction one split part is given.
pub const MIN_SPLIT_K: usize = 128;

impl GemmPlan {
    /// The tiling of an `m × n` GEMM over a reduction of `k` on weights `w`, by the options'
    /// fixed tiling or by rule: 16-row tiles for short inputs; on hardware GPUs, cooperative
    /// matrices when on (f16 weights), then 16-row tiles and split-K until the grid fills a
    /// large GPU (`HARDWARE_GROUPS`); CPU-emulated adapters keep whole tiles (one thread per
    /// core already has enough workgroups).
    pub fn choose(choice: &KernelChoice, m: usize, n: usize, k: usize, w: GemmWeights) -> GemmPlan {
        let splits_for = |groups: usize| -> u32 {
            let mut s = 1;
            while w.splits() && groups * s < HARDWARE_GROUPS && k / (2 * s) >= MIN_SPLIT_K {
                s *= 2;
            }
            s as u32
        };
        if let Some(t) = choice.tile {
            let split_k = match w.splits() {
                true => t.split_k.min(k.div_ceil(32) as u32).max(1),
                false => 1,
            };
            let kernel = Kernel::gemm_tiled(k, w, t.short);
            return GemmPlan { kernel, split_k };
        }
        if w == GemmWeights::F16 && choice.coop.is_some() && m > 32 {
            let groups = n.div_ceil(64) * m.div_ceil(64);
            let split_k = splits_for(groups);
            return GemmPlan {
                kernel: Kernel::GemmCoop,
                split_k,
            };
        }
        let kernel = Kernel::gemm_tiled(k, w, Tile::for_rows(m) == Tile::Short);
        if choice.lanes && kernel == Kernel::Gemm(Tile::for_rows(m)) {
            return GemmPlan {
                kernel: Kernel::GemmLanes,
                split_k: 1,
            };
        }
        if !choice.hardware {
            return GemmPlan { kernel, split_k: 1 };
        }
        let short = m <= 32 || n.div_ceil(64) * m.div_ceil(64) < HARDWARE_GROUPS;
        let kernel = Kernel::gemm_tiled(k, w, short);
        let groups = n.div_ceil(64) * m.div_ceil(kernel.tile_rows());
        GemmPlan {
            kernel,
            split_k: splits_for(groups),
        }
    }

    /// The (x, y, z) workgroup grid: column tiles, row tiles, split parts.
    pub fn groups(&self, m: usize, n: usize) -> [u32; 3] {
        [
            n.div_ceil(64) as u32,
            m.div_ceil(self.kernel.tile_rows()) as u32,
            self.split_k,
        ]
    }

    /// The reduction each part covers: a multiple of the kernels' 32-deep k slices.
    pub fn k_len(&self, k: usize) -> usize {
        k.div_ceil(self.split_k as usize).next_multiple_of(32)
    }

    /// `gemm_f16 16x64 split 4`, for `bench`.
    pub fn describe(&self) -> String {
        let tile = match self.kernel.tile_rows() {
            1 => String::new(),
            r => format!(" {r}x64"),
        };
        let split = match self.split_k {
            1 => String::new(),
            s => format!(" split-k {s}"),
        };
        format!("{}{tile}{split}", self.kernel.name())
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::super::context::TileChoice;
    use super::super::shader_code::tests::choice;
    use super::*;

    const F32: GemmWeights = GemmWeights::F32;
    const F16: GemmWeights = GemmWeights::F16;

    #[test]
    fn packed_weights_take_the_same_tiling_rule() {
        let c = choice(false, false, None);
        // bert-base q4 at 1 x 128 tokens: split like f32 (same GEMM body); integer q8 only
        // takes short tiles (its zero-point corrections need whole sums).
        let f32 = GemmPlan::choose(&c, 128, 768, 3072, F32);
        let q4 = GemmPlan::choose(&c, 128, 768, 3072, GemmWeights::Q4);
        assert_eq!(
            (q4.kernel, q4.split_k),
            (Kernel::GemmQ4(Tile::Short), f32.split_k)
        );
        let q8 = GemmPlan::choose(&c, 128, 768, 3072, GemmWeights::Q8Int);
        assert_eq!((q8.kernel, q8.split_k), (Kernel::GemmQ8Int(Tile::Short), 1));
        let q8 = GemmPlan::choose(&c, 4096, 768, 768, GemmWeights::Q8);
        assert_eq!((q8.kernel, q8.split_k), (Kernel::GemmQ8(Tile::Tall), 1));
    }

    #[test]
    fn gemms_split_only_on_hardware_and_only_long_reductions() {
        let mut c = choice(false, false, None);
        // bert-base at 1 x 128 tokens: 16-row tiles and split-K fill a large GPU.
        let p = GemmPlan::choose(&c, 128, 768, 3072, F32);
        assert_eq!(p.kernel, Kernel::Gemm(Tile::Short));
        assert!(p.split_k > 1 && p.k_len(3072) >= MIN_SPLIT_K, "{p:?}");
        let groups = p.groups(128, 768);
        assert!((groups[0] * groups[1] * groups[2]) as usize >= HARDWARE_GROUPS);
        // A large batch has enough tiles already.
        let p = GemmPlan::choose(&c, 4096, 768, 768, F32);
        assert_eq!((p.kernel, p.split_k), (Kernel::Gemm(Tile::Tall), 1));
        // Never split a reduction too short to share.
        assert_eq!(GemmPlan::choose(&c, 128, 64, 64, F32).split_k, 1);
        // CPU-emulated adapters: the plain rule, or the lanes GEMM for f32 with k % 4 == 0.
        c.hardware = false;
        let p = GemmPlan::choose(&c, 128, 768, 3072, F32);
        assert_eq!((p.kernel, p.split_k), (Kernel::Gemm(Tile::Tall), 1));
        c.lanes = true;
        let p = GemmPlan::choose(&c, 128, 768, 3072, F32);
        assert_eq!((p.kernel, p.split_k), (Kernel::GemmLanes, 1));
        assert_eq!(p.groups(128, 768), [12, 32, 1]);
        for (k, w) in [(3071, F32), (3072, F16), (3072, GemmWeights::Q4)] {
            assert_ne!(
                GemmPlan::choose(&c, 128, 768, k, w).kernel,
                Kernel::GemmLanes
            );
        }
        c.lanes = false;
        // A fixed tiling wins, split at most once per 32-deep slice.
        c.tile = Some("16:4".parse().unwrap());
        let p = GemmPlan::choose(&c, 128, 768, 40, F16);
        assert_eq!((p.kernel, p.split_k), (Kernel::GemmF16(Tile::Short), 2));
        assert_eq!(p.describe(), "gemm_f16 16x64 split-k 2");
        let p = GemmPlan::choose(&c, 128, 768, 3072, GemmWeights::Q8Int);
        assert_eq!((p.kernel, p.split_k), (Kernel::GemmQ8Int(Tile::Short), 1));
        assert!("32".parse::<TileChoice>().is_err() && "64:0".parse::<TileChoice>().is_err());
    }
}
